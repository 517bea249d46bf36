import { describe, expect, it } from "vitest";
import { codeBlocks, documentedUrl, matchOutput, shellExamples } from "./support/readme-examples.ts";

// The doc test's reading of the README (test/support/readme-examples.ts): what counts as a command, as its output,
// and what an abbreviated output admits. A convention that matched too much would let every example pass.

const fenced = (language: string, body: string, above = "") => `${above}${above ? "\n" : ""}\`\`\`${language}\n${body}\n\`\`\`\n`;

describe("codeBlocks", () => {
  it("finds fences, indented ones inside list items too, with the comment right above", () => {
    const markdown = [
      "text",
      fenced("sh", "curl a"),
      "- item",
      "",
      "  <!-- doc-test: not run: roles -->",
      "  ```sql",
      "  CREATE ROLE x;",
      "  ```",
      fenced("text", "http://127.0.0.1:8080/explorer"),
    ].join("\n");
    const blocks = codeBlocks(markdown);
    expect(blocks.map((block) => [block.language, block.lines, block.marker])).toEqual([
      ["sh", ["curl a"], undefined],
      ["sql", ["CREATE ROLE x;"], "doc-test: not run: roles"],
      ["text", ["http://127.0.0.1:8080/explorer"], undefined],
    ]);
    expect(documentedUrl(blocks[2]!)).toBe("http://127.0.0.1:8080/explorer");
    expect(documentedUrl(blocks[0]!)).toBeUndefined();
  });

  it("refuses a fence that is never closed", () => {
    expect(() => codeBlocks("```sh\ncurl a\n")).toThrow(/never closed/);
  });
});

describe("shellExamples", () => {
  it("takes the # lines right under a command as its output, and a # line after a blank line as prose", () => {
    const [block] = codeBlocks(
      fenced(
        "sh",
        ["# what this is", "curl a \\", "  -d b", "# out 1", "#", "# out 3", "", "# the next one", "curl c", "curl d # a shell comment", "# d's output"].join("\n"),
      ),
    );
    expect(shellExamples(block!)).toEqual([
      { command: "curl a \\\n  -d b", line: 3, output: ["out 1", "", "out 3"] },
      { command: "curl c", line: 10, output: undefined },
      { command: "curl d # a shell comment", line: 11, output: ["d's output"] },
    ]);
  });
});

describe("matchOutput", () => {
  it("matches whole output line by line, ... standing for any text within a line", () => {
    expect(matchOutput(['{"a":1,...}'], '{"a":1,"b":2}\n', true)).toEqual({ matched: true });
    expect(matchOutput(['{"a":1,...}'], '{"a":2,"b":2}\n', true).matched).toBe(false);
    // A line's ... never swallows a line break: two lines are not one.
    expect(matchOutput(["a...b"], "a\nb\n", true).matched).toBe(false);
    // Regular-expression characters are text.
    expect(matchOutput(["W/\"x+y\" (1)"], 'W/"x+y" (1)\n', true)).toEqual({ matched: true });
    expect(matchOutput(["W/\"x+y\" (1)"], 'W/"xxy" (1)\n', true).matched).toBe(false);
  });

  it("wants every line shown and no more, unless a line is ... alone", () => {
    expect(matchOutput(["a"], "a\nb\n", true).matched).toBe(false);
    expect(matchOutput(["a", "b"], "a\n", true).matched).toBe(false);
    expect(matchOutput(["a", "...", "d"], "a\nb\nc\nd\n", true)).toEqual({ matched: true });
    expect(matchOutput(["a", "...", "d"], "a\nd\n", true)).toEqual({ matched: true });
    expect(matchOutput(["a", "...", "d"], "a\nb\nc\n", true).matched).toBe(false);
    expect(matchOutput(["a", "..."], "a\nanything\nelse\n", true)).toEqual({ matched: true });
  });

  it("drops the CR of HTTP header lines", () => {
    expect(matchOutput(["HTTP/1.1 200 OK", "etag: x", ""], "HTTP/1.1 200 OK\r\netag: x\r\n\r\n", true)).toEqual({ matched: true });
  });

  it("lets a command still running pass once the lines above its last ... have come, complete", () => {
    const shown = ["event: connected", "id: 5", "..."];
    expect(matchOutput(shown, "event: connected\nid: 5\n", false)).toEqual({ matched: true });
    // The line is not complete yet: it may still become something else.
    expect(matchOutput(shown, "event: connected\nid: 5", false).matched).toBe(false);
    expect(matchOutput(shown, "event: connected\nid: 6\n", false).matched).toBe(false);
    // Output shown in full is only ever compared with a finished command's.
    expect(matchOutput(["a"], "a\n", false)).toEqual({ matched: false, reason: "the command has not finished" });
  });
});
