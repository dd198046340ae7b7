// Progress of a long operation on a terminal (ora): a spinner on stderr while it runs, one line when it ends. Off
// when stderr is not a terminal (scripts, CI, the tests) or the command prints JSON: stdout stays machine-readable
// and stderr keeps only what is said there on purpose.

export interface Progress {
  text(text: string): void;
  succeed(text: string): void;
  fail(text: string): void;
}

const silent: Progress = { text: () => {}, succeed: () => {}, fail: () => {} };

/** A spinner on a terminal, or nothing (ora is loaded only for a terminal). */
export async function progress(text: string, opts: { json?: boolean; stream?: NodeJS.WriteStream } = {}): Promise<Progress> {
  const stream = opts.stream ?? process.stderr;
  if (opts.json || !stream.isTTY || process.env.CI) return silent;
  const { default: ora } = await import('ora');
  const spinner = ora({ text, stream }).start();
  return {
    text: (t) => {
      spinner.text = t;
      // Drawn now, not at the next frame: a synchronous step (a solver run) would hold the frame back.
      spinner.render();
    },
    succeed: (t) => void spinner.succeed(t),
    fail: (t) => void spinner.fail(t),
  };
}
