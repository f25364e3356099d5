#!/usr/bin/env node
// runbox-mcp's launcher: runs the `runbox` binary of the per-platform package npm installed
// beside this one (`@runbox-mcp/PLATFORM-ARCH`, an optional dependency whose `os`, `cpu`
// and `libc` fields let npm pick the one for this machine), with the same arguments and
// stdio, so `npx -y runbox-mcp mcp` is `runbox mcp`. SIGINT, SIGTERM and SIGHUP sent to
// this process go to the binary; this process exits as the binary did (its code, or the
// same signal).
"use strict";

const { spawn } = require("child_process");
const path = require("path");

const platform = `${process.platform}-${process.arch}`;
const packageName = `@runbox-mcp/${platform}`;

// The binary of this platform's package, or null when npm did not install it.
function binary() {
  let manifest;
  try {
    manifest = require.resolve(`${packageName}/package.json`);
  } catch (error) {
    if (error && error.code === "MODULE_NOT_FOUND") return null;
    throw error;
  }
  return path.join(path.dirname(manifest), "bin", "runbox");
}

// The C library of a Linux machine, when Node can tell: "glibc 2.36", or "musl".
function linuxLibc() {
  if (process.platform !== "linux") return null;
  try {
    const header = process.report.getReport().header;
    if (header.glibcVersionRuntime) return `glibc ${header.glibcVersionRuntime}`;
    return "musl";
  } catch (_) {
    return null;
  }
}

function missing() {
  const own = require("../package.json");
  const built = Object.keys(own.optionalDependencies || {}).map((name) =>
    name.replace(/^@runbox-mcp\//, ""),
  );
  const libc = linuxLibc();
  const lines = [
    `runbox-mcp: no runbox binary for this platform, ${platform}${libc ? ` (${libc})` : ""}: ` +
      `the package ${packageName} is not installed.`,
  ];
  if (built.includes(platform)) {
    lines.push(
      `npm did not install the optional dependency ${packageName}@${own.version}: it could ` +
        "not be fetched, or optional dependencies were left out (--omit=optional, " +
        "--no-optional). Install runbox-mcp again without that.",
    );
  } else {
    lines.push(
      `runbox-mcp ${own.version} has binaries for: ${built.join(", ") || "no platform"}. ` +
        "Elsewhere, build runbox from source (cargo build --release) and run it directly.",
    );
  }
  if (libc === "musl" || (libc && !/^glibc 2\.(3[4-9]|[4-9]\d)/.test(libc))) {
    lines.push("The Linux binaries need glibc 2.34 or later.");
  }
  process.stderr.write(lines.join("\n") + "\n");
  process.exit(1);
}

const exe = binary();
if (exe === null) missing();

const child = spawn(exe, process.argv.slice(2), { stdio: "inherit" });

const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
const forward = (signal) => {
  // A terminal's Ctrl-C reaches the binary too (same process group); once more is harmless
  // for runbox, which stops on the first.
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of forwarded) process.on(signal, forward);

child.on("error", (error) => {
  process.stderr.write(`runbox-mcp: cannot start ${exe}: ${error.message}\n`);
  process.exit(1);
});

child.on("exit", (code, signal) => {
  if (signal) {
    // End the same way, so that whoever started this sees the signal.
    for (const s of forwarded) process.removeListener(s, forward);
    process.kill(process.pid, signal);
    // A signal that does not end a Node process (one it ignores) falls through to here.
    setTimeout(() => process.exit(128 + (require("os").constants.signals[signal] || 0)), 100);
  } else {
    process.exit(code === null ? 1 : code);
  }
});
