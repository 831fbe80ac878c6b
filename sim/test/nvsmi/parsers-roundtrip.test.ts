// The simulator and the parsers meet here: for every catalogued product and driver, the
// simulated nvidia-smi's output, read back by our own parsers, must describe exactly the
// state the simulator holds. A layout change the parsers misread, or a driver generation the
// simulator prints in a layout the parsers do not know, fails here.
import assert from "node:assert/strict";
import { catalogFor, DRIVERS, driverAtLeast, PRODUCTS } from "../../../src/mig/catalog/index.js";
import { parseGpus } from "../../../src/nvsmi/gpus.js";
import { parseLci } from "../../../src/nvsmi/lci.js";
import { parseLgi } from "../../../src/nvsmi/lgi.js";
import { parseLgip } from "../../../src/nvsmi/lgip.js";
import { parseLgipp } from "../../../src/nvsmi/lgipp.js";
import { parseQueryGpu } from "../../../src/nvsmi/query.js";
import { parseTable } from "../../../src/nvsmi/table.js";
import { cleanupNodes, SimNode } from "./helpers.js";

describe("simulated nvidia-smi read back by the parsers, every product and driver", () => {
  after(cleanupNodes);
  for (const product of PRODUCTS) {
    for (const driver of DRIVERS[product]) {
      it(`${product} ${driver}: -L, -lgi, -lci, -lgip, -lgipp, query and table agree with the state`, async () => {
        const cat = catalogFor(product, driver);
        const node = new SimNode({ product, driver, gpus: 2 });
        await node.setup("-i 1 -mig 1");
        // The smallest plain profile, as many as fit, plus nothing on GPU 0 (MIG off there).
        const small = cat.giProfiles
          .filter((p) => !p.name.includes("+"))
          .sort((a, b) => a.memorySlices - b.memorySlices)[0]!;
        await node.setup(`mig -i 1 -cgi ${Array(small.instances).fill(small.id).join(",")} -C`);
        const state = node.state();
        const gis = state.gpus[1]!.gis;
        assert.equal(gis.length, small.instances);

        const lgi = parseLgi((await node.run("mig -lgi")).out);
        assert.deepEqual(
          lgi.gpuInstances.map((g) => [g.gpu, g.id, g.profileId, g.start, g.size, g.name]).sort(),
          gis.map((g) => [1, g.id, g.profileId, g.start, g.size, small.name]).sort(),
        );
        const lci = parseLci((await node.run("mig -lci")).out);
        assert.deepEqual(
          lci.computeInstances.map((c) => [c.gpuInstanceId, c.id]).sort(),
          gis.flatMap((g) => g.cis.map((c) => [g.id, c.id])).sort(),
        );
        const listed = parseGpus((await node.run("-L")).out);
        assert.deepEqual(
          listed.gpus.map((g) => g.uuid),
          state.gpus.map((g) => g.uuid),
        );
        assert.equal(listed.gpus[0]!.migDevices.length, 0);
        const migUuids = listed.gpus[1]!.migDevices.map((d) => d.uuid).sort();
        // Before R470, -L names MIG devices by GPU UUID and GI/CI ids (mig-reference §5).
        const oldForm = !driverAtLeast(driver, "470");
        const gpuUuid = state.gpus[1]!.uuid;
        const stateUuids = gis
          .flatMap((g) => g.cis.map((c) => (oldForm ? `MIG-${gpuUuid}/${g.id}/${c.id}` : c.uuid)))
          .sort();
        assert.deepEqual(migUuids, stateUuids);
        if (oldForm) {
          assert.deepEqual(
            listed.gpus[1]!.migDevices.map((d) => d.gpuInstanceId).sort(),
            gis.map((g) => g.id).sort(),
          );
        }

        const lgipOut = await node.run("mig -i 1 -lgip");
        const lgip = parseLgip(lgipOut.out);
        const profiles = lgip.gpus[0]!.profiles;
        assert.deepEqual(
          profiles.map((p) => p.name).sort(),
          cat.giProfiles.map((p) => p.name).sort(),
        );
        assert.equal(
          profiles.find((p) => p.id === small.id)!.free,
          0,
          "every instance of the profile is used",
        );
        const lgipp = parseLgipp((await node.run("mig -i 1 -lgipp")).out);
        for (const p of cat.giProfiles) {
          const got = lgipp.gpus[0]!.placements.find((x) => x.profileId === p.id);
          assert.deepEqual(
            got?.starts,
            p.placements.map((x) => x.start),
            `placements of ${p.name}`,
          );
        }

        const q = parseQueryGpu(
          (await node.run("--query-gpu=index,uuid,driver_version,mig.mode.current --format=csv"))
            .out,
        );
        assert.deepEqual(
          q.rows.map((r) => [r.index, r.uuid, r.driver_version, r["mig.mode.current"]]),
          [
            [0, state.gpus[0]!.uuid, driver, "Disabled"],
            [1, state.gpus[1]!.uuid, driver, "Enabled"],
          ],
        );
        const table = parseTable((await node.run("")).out);
        assert.equal(table.driverVersion, driver);
        assert.deepEqual(
          table.gpus.map((g) => g.migMode),
          ["Disabled", "Enabled"],
        );
        assert.equal(table.migDevices.length, gis.length);
        assert.deepEqual(
          table.migDevices.map((d) => d.gpuInstanceId).sort(),
          gis.map((g) => g.id).sort(),
        );
      });
    }
  }
});
