(() => {
  const [ENTRY, STDIN, STATUS] = scriptArgs.slice(-3);
  const real = std;
  let input = null;
  class ProgramExit { constructor(code) { this.code = code; } }
  const view = {};
  for (const key of Object.keys(real)) view[key] = real[key];
  Object.defineProperty(view, "in", { get: () => input, enumerable: true });
  view.exit = (code) => { throw new ProgramExit(code === undefined ? 0 : code | 0); };
  globalThis.std = view;
  os.setReadHandler(0, () => {
    const line = real.in.getline();
    if (line === null) { os.setReadHandler(0, null); return; }
    // `once`: run the program as qjs would (stdin is what follows) and end.
    const once = line.trim() === "once";
    if (once) os.setReadHandler(0, null);
    input = once ? real.in : real.open(STDIN, "r");
    let status = 0;
    try {
      real.loadScript(ENTRY);
    } catch (e) {
      if (e instanceof ProgramExit) {
        status = e.code;
      } else {
        // The stack without the driver's own frames (from `loadScript` on).
        const stack = String((e && e.stack) || "").split("\n");
        const own = stack.findIndex((line) => line.includes("at loadScript (native)"));
        const frames = (own < 0 ? stack : stack.slice(0, own)).join("\n");
        real.err.puts(e instanceof Error ? `${e}\n${frames}${own < 0 ? "" : "\n"}` : `${e}\n`);
        status = 1;
      }
    }
    os.setTimeout(() => {
      real.out.flush();
      real.err.flush();
      if (once) real.exit(status);
      if (input) input.close();
      real.writeFile(STATUS, String(status));
    }, 0);
  });
})();
