import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // A passing run prints no log lines: each test's stderr is printed only when it fails (see the file).
    setupFiles: ["test/support/held-stderr.ts"],
    globalSetup: ["test/support/build.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
