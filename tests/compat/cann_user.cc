// cann_user.cc - a small HCCL program written the way CANN users write them, built by
// install_test.sh against an installed tree exactly as users build:
//   g++ main.cc -I$ASCEND_HOME_PATH/include -L$ASCEND_HOME_PATH/lib64 -lhccl -lascendcl -lpthread
// Usage: a.out threads N | procs N
// Each rank: aclrtSetDevice, aclrtMalloc, aclrtMemcpy host->device, aclrtCreateStream,
// HcclCommInitRootInfo (root info from HcclGetRootInfo), HcclAllReduce + HcclAllGather +
// HcclBroadcast, aclrtSynchronizeStream, aclrtMemcpy back, check, then tear down.
// Also the set-up calls CANN's hccl_test makes on every run (aclrtGetSocName,
// aclrtSetDeviceSatMode, aclrtSetStreamFailureMode, aclrtGetMemInfo compared with
// ACL_ERROR_NONE, timing events, aclprof* with profiling on).
#include <hccl/hccl.h>
#include <hccl/hccl_types.h>
#include <acl/acl.h>
#include <acl/acl_prof.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define ACL_CHECK(x)                                                                   \
    do {                                                                               \
        aclError e_ = (x);                                                             \
        if (e_ != ACL_SUCCESS) {                                                       \
            std::fprintf(stderr, "rank %d: %s failed: %d\n", rank, #x, (int)e_);       \
            return 1;                                                                  \
        }                                                                              \
    } while (0)
#define HCCL_CHECK(x)                                                                  \
    do {                                                                               \
        HcclResult r_ = (x);                                                           \
        if (r_ != HCCL_SUCCESS) {                                                      \
            std::fprintf(stderr, "rank %d: %s failed: %d (%s)\n", rank, #x, (int)r_,   \
                         HcclGetErrorString(r_));                                      \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

// hccl_test -z 1: buffers in reserved virtual memory mapped to physical memory, made
// known to the communicator, then an all-reduce in place of the usual aclrtMalloc ones.
static int ZeroCopyAllReduce(int rank, int nranks, HcclComm comm, aclrtStream stream)
{
    aclrtPhysicalMemProp prop = {aclrtMemHandleType::ACL_MEM_HANDLE_TYPE_NONE,
                                 aclrtMemAllocationType::ACL_MEM_ALLOCATION_TYPE_PINNED,
                                 ACL_HBM_MEM_HUGE,
                                 {static_cast<uint32_t>(rank), aclrtMemLocationType::ACL_MEM_LOCATION_TYPE_DEVICE},
                                 0};
    size_t gran = 0;
    ACL_CHECK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &gran));
    const uint64_t count = 100003;
    const size_t bytes = count * sizeof(int32_t), part = (bytes + gran - 1) / gran * gran, total = 2 * part;
    void *va = nullptr;
    ACL_CHECK(aclrtReserveMemAddress(&va, total, 0, nullptr, 1));
    HCCL_CHECK(HcclCommSetMemoryRange(comm, va, total, 0, 0));
    aclrtDrvMemHandle handle = nullptr;
    ACL_CHECK(aclrtMallocPhysical(&handle, total, &prop, 0));
    ACL_CHECK(aclrtMapMem(va, total, 0, handle, 0));
    HCCL_CHECK(HcclCommActivateCommMemory(comm, va, total, 0, handle, 0));
    if (HcclCommActivateCommMemory(comm, va, total, 1, handle, 0) != HCCL_E_PARA) {  // offset must be 0
        std::fprintf(stderr, "rank %d: HcclCommActivateCommMemory accepted offset 1\n", rank);
        return 1;
    }
    void *send = va, *recv = static_cast<char *>(va) + part;
    std::vector<int32_t> host(count);
    for (uint64_t i = 0; i < count; ++i) host[i] = (rank + 1) * static_cast<int32_t>(i % 1000);
    ACL_CHECK(aclrtMemcpy(send, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    HCCL_CHECK(HcclAllReduce(send, recv, count, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, stream));
    ACL_CHECK(aclrtSynchronizeStream(stream));
    ACL_CHECK(aclrtMemcpy(host.data(), bytes, recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    int errors = 0;
    for (uint64_t i = 0; i < count; ++i)
        if (host[i] != nranks * (nranks + 1) / 2 * static_cast<int32_t>(i % 1000)) errors++;
    if (errors) std::fprintf(stderr, "rank %d: zero-copy all-reduce: %d wrong values\n", rank, errors);
    HCCL_CHECK(HcclCommDeactivateCommMemory(comm, va));
    ACL_CHECK(aclrtUnmapMem(va));
    ACL_CHECK(aclrtFreePhysical(handle));
    HCCL_CHECK(HcclCommUnsetMemoryRange(comm, va));
    ACL_CHECK(aclrtReleaseMemAddress(va));
    return errors;
}

static int RunRank(int rank, int nranks, const HcclRootInfo &root)
{
    const uint64_t count = 4099;  // not a multiple of the rank count
    const size_t bytes = count * sizeof(float);
    ACL_CHECK(aclrtSetDevice(rank));
    const char *soc = aclrtGetSocName();
    if (soc == nullptr) {
        std::fprintf(stderr, "rank %d: aclrtGetSocName returned NULL\n", rank);
        return 1;
    }
    ACL_CHECK(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN));
    aclrtStream stream = nullptr;
    ACL_CHECK(aclrtCreateStream(&stream));
    ACL_CHECK(aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE));
    aclrtEvent start = nullptr, end = nullptr;
    ACL_CHECK(aclrtCreateEvent(&start));
    ACL_CHECK(aclrtCreateEvent(&end));
    size_t freeMem = 0, totalMem = 0;
    if (aclrtGetMemInfo(aclrtMemAttr::ACL_HBM_MEM_HUGE, &freeMem, &totalMem) != ACL_ERROR_NONE || totalMem == 0) {
        std::fprintf(stderr, "rank %d: aclrtGetMemInfo failed\n", rank);
        return 1;
    }

    std::vector<float> host(count);
    for (uint64_t i = 0; i < count; ++i) host[i] = static_cast<float>(rank + 1) * static_cast<float>(i % 100);
    void *send = nullptr, *recv = nullptr, *gathered = nullptr, *bcast = nullptr;
    ACL_CHECK(aclrtMalloc(&send, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    ACL_CHECK(aclrtMalloc(&recv, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    ACL_CHECK(aclrtMalloc(&gathered, bytes * nranks, ACL_MEM_MALLOC_HUGE_FIRST));
    ACL_CHECK(aclrtMalloc(&bcast, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    ACL_CHECK(aclrtMemcpy(send, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    if (rank == 0) ACL_CHECK(aclrtMemcpy(bcast, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));

    // as CANN's documentation shows: set a config field only where it is supported
    HcclCommConfig config;
    HcclCommConfigInit(&config);
    if (HcclGetCommConfigCapability() <= HCCL_COMM_CONFIG_EXEC_TIMEOUT) {
        std::fprintf(stderr, "rank %d: HcclGetCommConfigCapability says hcclExecTimeOut is unsupported\n", rank);
        return 1;
    }
    config.hcclExecTimeOut = 60;
    HcclComm comm = nullptr;
    HCCL_CHECK(HcclCommInitRootInfoConfig(nranks, &root, rank, &config, &comm));
    uint32_t size = 0, id = 0;
    HCCL_CHECK(HcclGetRankSize(comm, &size));
    HCCL_CHECK(HcclGetRankId(comm, &id));
    if (size != static_cast<uint32_t>(nranks) || id != static_cast<uint32_t>(rank)) {
        std::fprintf(stderr, "rank %d: rank size/id %u/%u\n", rank, size, id);
        return 1;
    }
    ACL_CHECK(aclrtRecordEvent(start, stream));
    HCCL_CHECK(HcclAllReduce(send, recv, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream));
    ACL_CHECK(aclrtRecordEvent(end, stream));
    HCCL_CHECK(HcclAllGather(send, gathered, count, HCCL_DATA_TYPE_FP32, comm, stream));
    HCCL_CHECK(HcclBroadcast(bcast, count, HCCL_DATA_TYPE_FP32, 0, comm, stream));
    ACL_CHECK(aclrtSynchronizeStream(stream));
    float ms = -1;
    ACL_CHECK(aclrtEventElapsedTime(&ms, start, end));

    std::vector<float> out(count), all(count * nranks), bc(count);
    ACL_CHECK(aclrtMemcpy(out.data(), bytes, recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    ACL_CHECK(aclrtMemcpy(all.data(), bytes * nranks, gathered, bytes * nranks, ACL_MEMCPY_DEVICE_TO_HOST));
    ACL_CHECK(aclrtMemcpy(bc.data(), bytes, bcast, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    int errors = 0;
    const float ranksum = static_cast<float>(nranks * (nranks + 1) / 2);
    for (uint64_t i = 0; i < count; ++i) {
        float base = static_cast<float>(i % 100);
        if (out[i] != ranksum * base) errors++;
        if (bc[i] != base) errors++;
        for (int q = 0; q < nranks; ++q)
            if (all[q * count + i] != static_cast<float>(q + 1) * base) errors++;
    }
    if (errors) std::fprintf(stderr, "rank %d: %d wrong values\n", rank, errors);

    if (errors == 0) errors = ZeroCopyAllReduce(rank, nranks, comm, stream);

    HCCL_CHECK(HcclCommDestroy(comm));
    ACL_CHECK(aclrtDestroyStream(stream));
    ACL_CHECK(aclrtDestroyEvent(start));
    ACL_CHECK(aclrtDestroyEvent(end));
    ACL_CHECK(aclrtFree(send));
    ACL_CHECK(aclrtFree(recv));
    ACL_CHECK(aclrtFree(gathered));
    ACL_CHECK(aclrtFree(bcast));
    ACL_CHECK(aclrtResetDevice(rank));
    return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s threads|procs N\n", argv[0]);
        return 2;
    }
    const std::string mode = argv[1];
    const int nranks = std::atoi(argv[2]);
    int rank = -1;  // for the CHECK macros in main
    HcclRootInfo root;
    std::memset(&root, 0, sizeof root);
    int failed = 0;
    if (mode == "threads") {
        ACL_CHECK(aclInit(nullptr));
        // hccl_test with HCCL_TEST_PROFILING=1: profile the run (nothing is collected here)
        const std::string prof_path = "/tmp/cann_user_prof";
        ACL_CHECK(aclprofInit(prof_path.c_str(), prof_path.size()));
        uint32_t prof_dev = 0;
        aclprofConfig *prof = aclprofCreateConfig(&prof_dev, 1, ACL_AICORE_PIPE_UTILIZATION, nullptr,
                                                  ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_HCCL_TRACE);
        if (prof == nullptr) return 1;
        ACL_CHECK(aclprofStart(prof));
        HCCL_CHECK(HcclGetRootInfo(&root));
        std::atomic<int> bad(0);
        std::vector<std::thread> ranks;
        for (int r = 0; r < nranks; ++r)
            ranks.emplace_back([r, nranks, &root, &bad] {
                if (RunRank(r, nranks, root) != 0) bad++;
            });
        for (auto &t : ranks) t.join();
        failed = bad.load();
        ACL_CHECK(aclprofStop(prof));
        ACL_CHECK(aclprofDestroyConfig(prof));
        ACL_CHECK(aclprofFinalize());
        ACL_CHECK(aclFinalize());
    } else if (mode == "procs") {
        HCCL_CHECK(HcclGetRootInfo(&root));  // the root listener lives in this process
        std::vector<pid_t> pids;
        for (int r = 0; r < nranks; ++r) {
            pid_t pid = fork();
            if (pid == 0) {
                rank = r;
                ACL_CHECK(aclInit(nullptr));
                int rc = RunRank(r, nranks, root);
                aclFinalize();
                std::fflush(stderr);
                _exit(rc);
            }
            pids.push_back(pid);
        }
        for (pid_t pid : pids) {
            int st = 0;
            waitpid(pid, &st, 0);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
        }
    } else {
        std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
        return 2;
    }
    std::printf("%s %d ranks: %s\n", mode.c_str(), nranks, failed ? "FAILED" : "OK");
    return failed ? 1 : 0;
}
