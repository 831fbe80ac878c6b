import assert from "node:assert/strict";
import { isSlicecheckError } from "../../src/errors.js";
import { expandRanges, foldNames, selectNodes, splitTerms } from "../../src/inventory/selectors.js";
import type { Inventory } from "../../src/inventory/types.js";
import { nodeSpec } from "../helpers/node.js";

const node = (name: string, tags: string[] = []) => nodeSpec(name, { tags });
const inv: Inventory = {
  file: "/x/inv.yaml",
  format: "native",
  nodes: [
    node("gpu01", ["a100"]),
    node("gpu02", ["a100"]),
    node("gpu03", ["h100"]),
    node("gpu04"),
    node("gpu10"),
    node("login1"),
  ],
  groups: { hopper: ["gpu03", "gpu04"] },
};
const names = (sel: string | undefined, x?: string) => selectNodes(inv, sel, x).map((n) => n.name);

describe("node selectors", () => {
  it("expands zero-padded ranges and lists", () => {
    assert.deepEqual(expandRanges("gpu[01-03,10]"), ["gpu01", "gpu02", "gpu03", "gpu10"]);
    assert.deepEqual(expandRanges("n[8-10]x"), ["n8x", "n9x", "n10x"]);
    assert.deepEqual(splitTerms("gpu[01-02,04],@hopper"), ["gpu[01-02,04]", "@hopper"]);
  });
  it("selects by range, group, tag, glob and lists, in inventory order without duplicates", () => {
    assert.deepEqual(names("gpu[01-03]"), ["gpu01", "gpu02", "gpu03"]);
    assert.deepEqual(names("@hopper,gpu01"), ["gpu01", "gpu03", "gpu04"]);
    assert.deepEqual(names("tag:a100,gpu02"), ["gpu01", "gpu02"]);
    assert.deepEqual(names("gpu1*"), ["gpu10"]);
    assert.deepEqual(
      names(undefined),
      inv.nodes.map((n) => n.name),
    );
    assert.deepEqual(
      names("all"),
      inv.nodes.map((n) => n.name),
    );
  });
  it("refuses terms that match nothing, naming them", () => {
    const cases: [string, RegExp][] = [
      ["gpu[01-05]", /no node named 'gpu05'/],
      ["@ampere", /no group 'ampere'; groups: hopper/],
      ["tag:b200", /no node has tag 'b200'; tags: a100, h100/],
      ["gpu[01-", /unbalanced brackets/],
      ["gpu[03-01]", /runs backwards/],
      ["gpu01,,gpu02", /"gpu01,,gpu02": has an empty term \(two commas in a row/],
      ["gpu01,", /has an empty term/],
      ["", /--nodes "": is empty; give node names/],
      ["  ", /is empty/],
      ["!", /'!' needs a term after it/],
      ["gpu01,!gpu09", /no node named 'gpu09'/],
    ];
    for (const [sel, re] of cases) {
      assert.throws(
        () => names(sel),
        (e: unknown) => isSlicecheckError(e, "SELECTOR") && re.test(e.message),
        sel,
      );
    }
  });
  it("leaves out !terms and --exclude, and only-! selectors start from every node", () => {
    assert.deepEqual(names("gpu*,!gpu0[2-3]"), ["gpu01", "gpu04", "gpu10"]);
    assert.deepEqual(names("!@hopper,!login1"), ["gpu01", "gpu02", "gpu10"]);
    assert.deepEqual(names("tag:a100,!tag:h100"), ["gpu01", "gpu02"]);
    assert.deepEqual(names(undefined, "gpu[01-04]"), ["gpu10", "login1"]);
    assert.deepEqual(names("gpu[01:03]", "gpu02"), ["gpu01", "gpu03"], "Ansible's [01:03] too");
    assert.throws(
      () => names(undefined, "gpu99"),
      (e: unknown) => isSlicecheckError(e, "SELECTOR") && /^--exclude "gpu99"/.test(e.message),
    );
  });
  it("with a warning sink, an exclusion that names nothing is reported and ignored (pdsh -x)", () => {
    const warned: string[] = [];
    const tolerant = (sel: string | undefined, x: string) =>
      selectNodes(inv, sel, x, (why) => warned.push(why)).map((n) => n.name);
    assert.deepEqual(tolerant("gpu*", "gpu99,gpu01"), ["gpu02", "gpu03", "gpu04", "gpu10"]);
    // A range past the inventory still leaves out what it names; each miss is reported.
    assert.deepEqual(tolerant(undefined, "gpu[03-05],@nosuch,tag:none"), [
      "gpu01",
      "gpu02",
      "gpu10",
      "login1",
    ]);
    assert.deepEqual(
      warned.map((w) => w.replace(/;.*/, "")),
      [
        `--exclude "gpu99": no node named 'gpu99' in /x/inv.yaml`,
        `--exclude "gpu[03-05]": no node named 'gpu05' in /x/inv.yaml`,
        `--exclude "@nosuch": no group 'nosuch'`,
        `--exclude "tag:none": no node has tag 'none'`,
      ],
    );
    // The selector itself stays strict, and so does a malformed exclusion.
    assert.throws(() => tolerant("gpu99", "gpu01"), /--nodes "gpu99": no node named/);
    assert.throws(() => tolerant(undefined, "gpu01,,gpu02"), /has an empty term/);
  });
  it("folds names into host lists that expand back to the same names", () => {
    const cases: [string[], string][] = [
      [["sim01", "sim02", "sim03", "sim05"], "sim[01-03,05]"],
      [["n8", "n9", "n10"], "n[8-10]"],
      [["gpu09", "gpu10", "gpu11"], "gpu[09-11]"],
      [["a1x", "a2x", "b1", "login"], "a[1-2]x,b1,login"],
      [["n001", "n02"], "n[001,02]"],
    ];
    for (const [list, folded] of cases) {
      assert.equal(foldNames(list), folded);
      assert.deepEqual(
        splitTerms(folded)
          .flatMap((t) => expandRanges(t))
          .sort(),
        [...list].sort(),
        folded,
      );
    }
  });
});
