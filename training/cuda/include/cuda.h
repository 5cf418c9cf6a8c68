/*
 * cuda.h for gorgonia.org/cu v0.9.4 against the CUDA 12/13 driver API headers.
 *
 * gorgonia.org/cu v0.9.4 was generated from the CUDA 10/11 cuda.h. Newer headers map a few
 * entry points to later ABI versions with different signatures (cuCtxCreate is
 * cuCtxCreate_v4 in CUDA 13, with a CUctxCreateParams argument) and change the type of
 * CUDA_KERNEL_NODE_PARAMS, so the package no longer compiles. This header, found before the
 * toolkit's on the include path (CGO_CFLAGS="-I training/cuda/include -I <cuda>/include"),
 * includes the toolkit's cuda.h and points those names back at the versions cu was written
 * for. Every symbol named here is still exported by the driver (libcuda.so.1) for binary
 * compatibility. The cuda backend calls none of them except through cu's context helpers;
 * it creates no context of its own (it retains the device's primary context).
 *
 * Also defined: CU_TARGET_COMPUTE_20/21 (Fermi targets removed from the enum, named by
 * cu's JIT options table).
 */
#ifndef SFSWEEP_CUDA_COMPAT_H
#define SFSWEEP_CUDA_COMPAT_H

#include_next <cuda.h>

#if CUDA_VERSION >= 12000

#ifdef __cplusplus
extern "C" {
#endif

#undef cuCtxCreate
#define cuCtxCreate cuCtxCreate_v2
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);

#undef cuMemAdvise
CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device);
#undef cuMemPrefetchAsync
CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);

#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams
#undef cuGraphExecKernelNodeSetParams
#define CUDA_KERNEL_NODE_PARAMS CUDA_KERNEL_NODE_PARAMS_v1
CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams);
CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams);
CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams);
CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams);

#undef cuGraphGetEdges
#undef cuGraphNodeGetDependencies
#undef cuGraphNodeGetDependentNodes
#undef cuGraphAddDependencies
#undef cuGraphRemoveDependencies
CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges);
CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies, size_t *numDependencies);
CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes, size_t *numDependentNodes);
CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies);
CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies);

#ifndef CU_TARGET_COMPUTE_20
#define CU_TARGET_COMPUTE_20 20
#define CU_TARGET_COMPUTE_21 21
#endif

#ifdef __cplusplus
}
#endif

#endif /* CUDA_VERSION >= 12000 */
#endif /* SFSWEEP_CUDA_COMPAT_H */
