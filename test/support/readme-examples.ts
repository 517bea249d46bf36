// The README's examples as data: its fenced code blocks, the shell commands in the `sh` blocks, and the output each
// command is shown with. test/readme.test.ts runs them; the conventions below are the README's contract with it.
//
// A few lines of fence parsing rather than a markdown library: the README's blocks are plain ``` fences (some indented
// inside a list item), and what matters here (the HTML comment right above a fence, comment lines right under a
// command) is line layout that a markdown AST would make harder to see, not easier.
//
// Conventions, in an `sh` block:
// - A command is a line that is not a comment, with its `\`-continued lines. Shell comments after it on the same
//   line are the shell's business.
// - The `#` lines right under a command (no blank line in between) are its output, one `# ` line per output line
//   (`#` alone: an empty line). A `#` line after a blank line, or at the top of a block, describes what follows and
//   is not checked.
// - In a shown output line, `...` stands for any text within that line (including none). A shown line that is `...`
//   alone stands for any number of lines. Output shown without a last `...` line is the whole output.
// - A command shown without output must succeed and print something that is not an error body.
// - `<!-- doc-test: not run: REASON -->` right above a fence says why the test does not run that block; every fence
//   the test does not run must say so, and the test knows the list, so a new one is a decision and not an accident.

export interface CodeBlock {
  /** The fence's language (`sh`, `ts`, `text`, ...), empty when none. */
  language: string;
  /** 1-based line of the opening fence in the README. */
  line: number;
  /** The block's lines, without the fences and without the indentation of the fence. */
  lines: string[];
  /** The HTML comment on the line right above the fence, without `<!--` and `-->`, if any. */
  marker: string | undefined;
}

export interface ShellExample {
  /** The command as pasted: continuation lines joined with their backslash-newlines kept. */
  command: string;
  /** 1-based README line of the command's first line. */
  line: number;
  /** The output lines shown under it, undefined when none are shown. */
  output: string[] | undefined;
}

const fence = /^(\s*)```(\S*)\s*$/;

export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split("\n");
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = fence.exec(lines[i] as string);
    if (open === null) continue;
    const indent = open[1] as string;
    const above = i > 0 ? /^\s*<!--\s*([\s\S]*?)\s*-->\s*$/.exec(lines[i - 1] as string) : null;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !new RegExp(`^${indent}\`\`\`\\s*$`).test(lines[j] as string); j++) {
      body.push((lines[j] as string).startsWith(indent) ? (lines[j] as string).slice(indent.length) : (lines[j] as string));
    }
    if (j === lines.length) throw new Error(`README line ${i + 1}: a fence that is never closed`);
    blocks.push({ language: open[2] as string, line: i + 1, lines: body, marker: above?.[1] });
    i = j;
  }
  return blocks;
}

/** The commands of an `sh` block, each with the output shown under it. */
export function shellExamples(block: CodeBlock): ShellExample[] {
  const examples: ShellExample[] = [];
  let current: ShellExample | undefined;
  /** Whether `#` lines now belong to `current` as output (nothing but output since the command). */
  let outputOpen = false;
  for (let i = 0; i < block.lines.length; i++) {
    const text = block.lines[i] as string;
    if (text.trim() === "") {
      outputOpen = false;
      continue;
    }
    if (text.startsWith("#")) {
      if (outputOpen && current !== undefined) (current.output ??= []).push(text === "#" ? "" : text.replace(/^# /, ""));
      continue;
    }
    const first = i;
    let command = text;
    while (command.endsWith("\\") && i + 1 < block.lines.length) command += `\n${block.lines[++i] as string}`;
    current = { command, line: block.line + 1 + first, output: undefined };
    examples.push(current);
    outputOpen = true;
  }
  return examples;
}

/** A `text` block that is one URL of this service: the address the README tells a reader to open. */
export function documentedUrl(block: CodeBlock): string | undefined {
  const [only, ...rest] = block.lines.filter((line) => line.trim() !== "");
  return rest.length === 0 && only !== undefined && /^https?:\/\/\S+$/.test(only.trim()) ? only.trim() : undefined;
}

export type OutputMatch = { matched: true } | { matched: false; reason: string };

/**
 * The lines of `actual` that are complete (ended by a newline), plus the unfinished last one when `finished`. HTTP's
 * header lines end in CRLF, which a reader never sees: the CR is dropped.
 */
function outputLines(actual: string, finished: boolean): string[] {
  const lines = actual.split("\n").map((line) => line.replace(/\r$/, ""));
  const last = lines.pop() as string;
  return finished && last !== "" ? [...lines, last] : lines;
}

function lineMatcher(shown: string): RegExp {
  const parts = shown.split("...").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${parts.join("[\\s\\S]*")}$`);
}

/**
 * Whether `actual` is what `shown` describes. With `finished` false (a command still running, a stream), only the
 * lines before a last `...` line must be there: that is all a reader was promised of a stream that never ends.
 */
export function matchOutput(shown: readonly string[], actual: string, finished: boolean): OutputMatch {
  const lines = outputLines(actual, finished);
  const openEnded = shown.at(-1) === "...";
  if (!finished && !openEnded) return { matched: false, reason: "the command has not finished" };
  // Matched by backtracking over `...` lines: each may take any number of lines. The README's outputs are short.
  const attempt = (s: number, a: number): string | undefined => {
    if (s === shown.length) return a === lines.length || (!finished && openEnded) ? undefined : `unexpected output from line ${a + 1}: ${lines[a]}`;
    const pattern = shown[s] as string;
    if (pattern === "...") {
      if (s === shown.length - 1) return undefined;
      let failure: string | undefined = "nothing after a `...` line matched";
      for (let k = a; k <= lines.length; k++) {
        failure = attempt(s + 1, k);
        if (failure === undefined) return undefined;
      }
      return failure;
    }
    if (a >= lines.length) return `missing output line ${a + 1}, shown as: ${pattern}`;
    if (!lineMatcher(pattern).test(lines[a] as string)) return `output line ${a + 1} is\n  ${lines[a]}\nshown as\n  ${pattern}`;
    return attempt(s + 1, a + 1);
  };
  const failure = attempt(0, 0);
  return failure === undefined ? { matched: true } : { matched: false, reason: failure };
}
