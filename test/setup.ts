// libp2p 2.x needs Promise.withResolvers, which Node 20 lacks: load the polyfill before anything else.
import '../src/polyfill.js';
