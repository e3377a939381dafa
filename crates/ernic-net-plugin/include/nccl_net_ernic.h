/*
 * ernic's NCCL net plugin: the C interface of libnccl-net-ernic.so.
 *
 * The library exports three tables, ncclNetPlugin_v6, ncclNetPlugin_v5 and
 * ncclNetPlugin_v4, laid out slot for slot as NCCL's ext-net interface of
 * those versions defines them. A collective library finds one by name with
 * dlsym and calls through its function pointers; nothing else is exported.
 *
 * What the plugin supports:
 *   - host memory only (NCCL_PTR_HOST); registering any other type fails
 *     with ncclInvalidArgument and a log line saying why;
 *   - one device, whose endpoint stripes over OFI_NCCL_FORCE_NUM_RAILS data
 *     rails (default 1);
 *   - one receive per irecv (maxRecvs is 1); tags are not matched;
 *   - iflush answers a NULL request: host memory needs no flush.
 *
 * Environment:
 *   ERNIC_NET_PROVIDER  ernic (default) or libfabric
 *   ERNIC_NET_MESH      for the ernic provider: the mesh to join, as
 *                       tcp:worker:HOST:PORT or tcp:manager:listen:PORT;
 *                       unset, the fabric is this process only
 *   FI_PROVIDER         for the libfabric provider: which one (for example
 *                       "tcp;ofi_rxm" or "shm"); unset, libfabric chooses
 *   OFI_NCCL_*          the transport's settings (see ernic-net)
 */

#ifndef NCCL_NET_ERNIC_H_
#define NCCL_NET_ERNIC_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_NET_HANDLE_MAXSIZE 128

#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclRemoteError = 6
} ncclResult_t;

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

/* The subsystem flag the plugin's lines carry. */
#define NCCL_NET 16

/* The caller's logger. The plugin always calls it with fmt "%s" and one
 * string argument: the line. */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags,
                                  const char *file, int line, const char *fmt, ...);

typedef struct {
  char *name;      /* the device's name, for logs */
  char *pciPath;   /* a /sys path for topology detection */
  uint64_t guid;   /* a unique id of the device */
  int ptrSupport;  /* NCCL_PTR_HOST */
  int speed;       /* Mbps */
  int port;        /* port number */
  float latency;   /* microseconds */
  int maxComms;    /* how many comms the device can hold */
  int maxRecvs;    /* receives one irecv may group: 1 */
} ncclNetProperties_v6_t;

typedef ncclNetProperties_v6_t ncclNetProperties_v5_t;

typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int speed;
  int port;
  int maxComms;
} ncclNetProperties_v4_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t *props);
  /* Fills NCCL_NET_HANDLE_MAXSIZE bytes at handle for the connecting side. */
  ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
  /* Non-blocking: leaves *sendComm NULL until connected; call again with
   * the same handle buffer (the plugin keeps its progress in it). */
  ncclResult_t (*connect)(int dev, void *handle, void **sendComm);
  /* Non-blocking: leaves *recvComm NULL until a connection is accepted. */
  ncclResult_t (*accept)(void *listenComm, void **recvComm);
  ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
  /* Host memory only: the fd and offset are ignored for NCCL_PTR_HOST. */
  ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
                              uint64_t offset, int fd, void **mhandle);
  ncclResult_t (*deregMr)(void *comm, void *mhandle);
  /* *request is NULL when the comm cannot take another message yet. */
  ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
                        void **request);
  /* n must be 1. *request is NULL when no receive can start yet. */
  ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
                        void **mhandles, void **request);
  ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                         void **request);
  /* *done becomes 1 when the request is complete, and sizes[0] (when not
   * NULL) the bytes moved; the request is then gone. */
  ncclResult_t (*test)(void *request, int *done, int *sizes);
  ncclResult_t (*closeSend)(void *sendComm);
  ncclResult_t (*closeRecv)(void *recvComm);
  ncclResult_t (*closeListen)(void *listenComm);
} ncclNet_v6_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v5_t *props);
  ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(int dev, void *handle, void **sendComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm);
  ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
  ncclResult_t (*deregMr)(void *comm, void *mhandle);
  ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
                        void **request);
  ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
                        void **mhandles, void **request);
  ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                         void **request);
  ncclResult_t (*test)(void *request, int *done, int *sizes);
  ncclResult_t (*closeSend)(void *sendComm);
  ncclResult_t (*closeRecv)(void *recvComm);
  ncclResult_t (*closeListen)(void *listenComm);
} ncclNet_v5_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v4_t *props);
  ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(int dev, void *handle, void **sendComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm);
  ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
  ncclResult_t (*deregMr)(void *comm, void *mhandle);
  ncclResult_t (*isend)(void *sendComm, void *data, int size, void *mhandle, void **request);
  ncclResult_t (*irecv)(void *recvComm, void *data, int size, void *mhandle, void **request);
  ncclResult_t (*iflush)(void *recvComm, void *data, int size, void *mhandle, void **request);
  ncclResult_t (*test)(void *request, int *done, int *size);
  ncclResult_t (*closeSend)(void *sendComm);
  ncclResult_t (*closeRecv)(void *recvComm);
  ncclResult_t (*closeListen)(void *listenComm);
} ncclNet_v4_t;

extern const ncclNet_v6_t ncclNetPlugin_v6;
extern const ncclNet_v5_t ncclNetPlugin_v5;
extern const ncclNet_v4_t ncclNetPlugin_v4;

#ifdef __cplusplus
}
#endif

#endif /* NCCL_NET_ERNIC_H_ */
