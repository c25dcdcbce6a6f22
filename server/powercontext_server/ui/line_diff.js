// A line diff for the Memory page: the longest common subsequence of two texts' lines, as a list
// of {op, line} where op is " " (kept), "-" (only in the old text) or "+" (only in the new one).
// Pure: no DOM. The table is (old lines + 1) × (new lines + 1) numbers; Candidates are small.

function lines(text) {
  // A final line feed ends the last line; it does not start an empty one.
  const split = text.split("\n");
  if (split[split.length - 1] === "") split.pop();
  return split;
}

export function lineDiff(oldText, newText) {
  const a = lines(oldText);
  const b = lines(newText);
  const width = b.length + 1;
  // common[i * width + j]: the LCS length of a[i:] and b[j:].
  const common = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i * width + j] = a[i] === b[j]
        ? common[(i + 1) * width + j + 1] + 1
        : Math.max(common[(i + 1) * width + j], common[i * width + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ op: " ", line: a[i] });
      i++;
      j++;
    } else if (common[(i + 1) * width + j] >= common[i * width + j + 1]) {
      out.push({ op: "-", line: a[i++] });
    } else {
      out.push({ op: "+", line: b[j++] });
    }
  }
  while (i < a.length) out.push({ op: "-", line: a[i++] });
  while (j < b.length) out.push({ op: "+", line: b[j++] });
  return out;
}
