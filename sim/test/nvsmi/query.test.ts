// `--query-gpu` / `--query-compute-apps` against captured CSV, and the refusal of unknown fields.

import assert from "node:assert/strict";
import { capture, cleanupNodes, localCapture, SimNode } from "./helpers.js";
import { h100Mixed } from "./scenarios.js";

after(cleanupNodes);

const PRICKLE_QUERY =
  "--query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw --format=csv,noheader,nounits";

describe("simulated nvidia-smi --query-gpu", () => {
  it("prints the MIG mode columns as captured (H100 PCIe 525, a 4-GPU host)", async () => {
    const h100 = new SimNode({ product: "H100-PCIE", driver: "525.125.06", migEnabled: true });
    h100.gpu((g) => {
      g.pciBusId = "00000000:01:00.0";
    });
    const r = await h100.run("-i 0 --query-gpu=pci.bus_id,mig.mode.current --format=csv");
    assert.equal(
      r.out,
      capture("nvidia-smi_query-gpu-csv_H100-PCIe-80GB_525.125.06_mig-mode-current.txt"),
    );

    const four = new SimNode({ product: "A100-80GB", driver: "535.183.01", gpus: 4 });
    const uuids = [
      "GPU-ec845691-fb46-e16d-abfb-b135308cb39f",
      "GPU-91672fbd-4bc1-0434-a653-77a9501c84de",
      "GPU-b4199570-ed3c-2a6b-646a-af77be93eac5",
      "GPU-1a4dff29-ab6d-9f64-f125-8b7cebdaac4a",
    ];
    four.edit((s) => {
      s.gpus.forEach((g, i) => {
        g.uuid = uuids[i] ?? g.uuid;
      });
    });
    await four.setup("-i 0 -mig 1");
    const q = await four.run("--query-gpu=uuid,mig.mode.current,mig.mode.pending --format=csv");
    assert.equal(
      q.out,
      capture("nvidia-smi_query-gpu-csv_4gpu_unknown_mig-mode-current-pending.txt"),
    );
  });

  it("reads [N/A] utilization under MIG and the GIs' memory in use (PRICKLE 580.173.02)", async () => {
    const mixed = await h100Mixed();
    mixed.gpu((g) => {
      g.uuid = "GPU-0d0831da-0c98-2717-6446-8acd91d39b65";
      g.telemetry = { ...g.telemetry, tempC: 62, powerDrawW: 237.84 };
      for (const [id, mib] of [
        [1, 12627],
        [11, 15],
        [13, 15],
      ] as const) {
        const gi = g.gis.find((x) => x.id === id);
        if (gi) gi.memoryUsedMiB = mib;
      }
      g.processes = [23808, 23804, 23806].map((pid) => ({
        pid,
        name: pid === 23808 ? "/tmp/ghost" : "/tmp/loadgen",
        type: "C" as const,
        gi: 1,
        ci: 0,
        usedMiB: 4188,
      }));
    });
    assert.equal(
      (await mixed.run(PRICKLE_QUERY)).out,
      localCapture("nvidia-smi_query-gpu-csv_H100-80GB-HBM3_580.173.02_mixed.txt"),
    );
    const apps = await mixed.run(
      "--query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory --format=csv,noheader,nounits",
    );
    assert.equal(
      apps.out,
      localCapture("nvidia-smi_query-compute-apps_H100-80GB-HBM3_580.173.02_mixed.txt"),
    );

    const off = new SimNode({ product: "H100-80GB", driver: "580.173.02" });
    off.gpu((g) => {
      g.uuid = "GPU-0d0831da-0c98-2717-6446-8acd91d39b65";
      g.telemetry = {
        ...g.telemetry,
        tempC: 66,
        powerDrawW: 355.57,
        gpuUtilPercent: 100,
        memoryUsedMiB: 4627,
      };
    });
    assert.equal(
      (await off.run(PRICKLE_QUERY)).out,
      localCapture("nvidia-smi_query-gpu-csv_H100-80GB-HBM3_580.173.02_mig-disabled.txt"),
    );

    const h200 = new SimNode({ product: "H200", driver: "580.173.02", migEnabled: true });
    await h200.setup("mig -cgi 19,19 -C");
    h200.gpu((g) => {
      g.uuid = "GPU-2af1c335-11fb-c9d3-4de3-27a25697fc35";
      g.telemetry = { ...g.telemetry, tempC: 38, powerDrawW: 123.31, memoryUsedMiB: 639 };
    });
    assert.equal(
      (await h200.run(PRICKLE_QUERY)).out,
      localCapture("nvidia-smi_query-gpu-csv_H200-141GB_580.173.02_2x1g.18gb.txt"),
    );
  });

  it("keeps units in the header and the values unless nounits", async () => {
    const n = new SimNode({ product: "A30", driver: "535.183.01" });
    const r = await n.run("--query-gpu=name,memory.total,power.draw,driver_version --format=csv");
    assert.equal(
      r.out,
      "name, memory.total [MiB], power.draw [W], driver_version\nNVIDIA A30, 24576 MiB, 62.50 W, 535.183.01\n",
    );
    const bare = await n.run("--query-gpu=memory.total --format=csv,nounits");
    assert.equal(bare.out, "memory.total [MiB]\n24576\n");
  });

  it("refuses an unknown field the way nvidia-smi does", async () => {
    const n = new SimNode({ product: "H100-80GB", driver: "580.173.02" });
    const r = await n.run("--query-gpu=driver_version,cuda_version --format=csv,noheader");
    assert.equal(r.out, 'Field "cuda_version" is not a valid field to query.\n\n');
    assert.equal(r.code, 2);
    const noFormat = await n.run("--query-gpu=name");
    assert.equal(noFormat.code, 2);
    const badGpu = await n.run("-i 3 --query-gpu=name --format=csv");
    assert.equal(badGpu.out, "No devices were found\n");
    assert.equal(badGpu.code, 6);
  });
});
