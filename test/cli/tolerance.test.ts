// --tolerance is percent in run and diff alike: one parser, a fraction inside.
import assert from "node:assert/strict";
import { parsePercent } from "../../src/cli/options.js";
import { isSlicecheckError } from "../../src/errors.js";

const parse = parsePercent("--tolerance");

function refusal(v: string): string {
  try {
    parse(v);
  } catch (e) {
    assert.ok(isSlicecheckError(e) && e.code === "USAGE", String(e));
    return e.message;
  }
  assert.fail(`'${v}' was accepted`);
}

describe("--tolerance (percent)", () => {
  it("reads 5 and 5% as five percent, kept as the fraction 0.05", () => {
    assert.equal(parse("5"), 0.05);
    assert.equal(parse("5%"), 0.05);
    assert.equal(parse(" 12.5 % "), 0.125);
    assert.equal(parse("100"), 1);
    assert.equal(parse("1"), 0.01);
  });

  it("accepts a percentage below 1 only with its sign", () => {
    assert.equal(parse("0.5%"), 0.005);
    const m = refusal("0.05");
    assert.match(m, /in percent/);
    assert.match(m, /for 5 percent write 5\b/);
    assert.match(m, /0\.05%/);
  });

  it("refuses values outside (0, 100] and anything that is not a number", () => {
    for (const v of ["0", "0%", "100.5", "500", "-5", "five", "", "5%%", "5e1", "0x5"])
      assert.match(refusal(v), /expects a percentage above 0 and at most 100/, v);
  });
});
