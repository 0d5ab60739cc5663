"""strata beside the Megatron-LM README's H100 weak-scaling table (docs/parallel.md, "How close to published
numbers"). Run from the repository root: python3 docs/megatron_h100_table.py [path/to/strata]. GPT shapes,
micro-batch 1, sequence parallelism where TP > 1, selective recomputation, ZeRO-1, 1F1B on DGX H100."""
import json, subprocess, sys

STRATA = sys.argv[1] if len(sys.argv) > 1 else "build/experiments/strata"
# model, heads, hidden, layers, TP, PP, DP, GPUs, batch, published TFLOP/s per GPU (Megatron-LM README)
rows = [("1.7B",16,2048,24,1,1,48,48,192,408.8),("7.1B",32,4096,30,2,1,48,96,192,465.9),("16B",48,6144,32,4,1,48,192,192,489.1),
("32B",56,7168,48,8,1,48,384,192,459.6),("70B",64,8192,84,8,2,48,768,384,419.7),("119B",80,10240,92,8,4,48,1536,768,420.5),
("177B",96,12288,96,8,6,48,2304,1152,432.8),("314B",128,16384,96,8,8,48,3072,1536,474.4),("462B",144,18432,112,8,16,48,6144,3072,459.9)]
print("| model | TP | PP | DP | GPUs | batch | published TFLOP/s/GPU | strata TFLOP/s/GPU | strata/published | strata step (s) | bubble (s) | exposed TP (s) | exposed DP (s) | peak memory (GiB) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for name,heads,hid,lay,tp,pp,dp,gpus,batch,pub in rows:
    args=[STRATA,"sim","step","--model",f"transformer:layers={lay},hidden={hid},heads={heads},vocab=131072,seq=4096",
      "--hw","configs/hw/dgx-h100.yaml","--nodes",str(gpus//8),"--tp",str(tp),"--pp",str(pp),"--dp",str(dp),"--micro-batch","1",
      "--global-batch",str(batch),"--recompute","selective","--zero","1","--format","json"]
    if tp>1: args.append("--sequence-parallel")
    j=json.loads(subprocess.run(args,capture_output=True,text=True,check=True).stdout)
    tf=j["model_flops_per_step"]/j["step_seconds"]/gpus/1e12
    b=j["breakdown_seconds"]
    print(f"| {name} | {tp} | {pp} | {dp} | {gpus} | {batch} | {pub} | {tf:.1f} | {tf/pub:.2f} | {j['step_seconds']:.2f} | {b['pipeline_bubble']:.2f} | {b['tp_comm']:.2f} | {b['dp_exposed']:.3f} | {j['peak_memory_bytes']/2**30:.1f} |")
