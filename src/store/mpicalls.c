/* mpicalls.c - every MPI call the program makes, timed through MPI's
 * profiling interface (see sp_mpicalls.h for the rules).
 *
 * Each intercepted function NAME is one line of SP_MPICALLS below, which
 * makes: the pointer to the library's PMPI_NAME, first pointing at a
 * resolver that looks it up (in the libmpi in use, as MPI_Finalize does in
 * mpi.c) and replaces itself, so every later call goes straight through;
 * and NAME itself, whose only check is one load and one predictable
 * branch on `recording` when the mode is off.
 *
 * Bytes moved (the `bytes` dataset, for the calls with a count and a
 * datatype): count * PMPI_Type_size(datatype), as the call was given
 * (a receive: the size of the posted buffer, which bounds the message).
 *   - point to point, one-sided (the origin buffer; Get_accumulate also
 *     its result buffer; Fetch_and_op and Compare_and_swap: one element of
 *     each, origin and result), Bcast, Reduce, Allreduce, Scan, Exscan: the
 *     one count;
 *   - Sendrecv, Sendrecv_replace: sent plus posted for receiving;
 *   - the other collectives: this rank's own contribution, the send side
 *     (Gather(v), Allgather(v): sendcount; Alltoall: sendcount per rank of
 *     the communicator, of the remote group for an intercommunicator;
 *     Alltoallv: the sum of sendcounts; Alltoallw: of sendcounts times
 *     their sendtypes' sizes; Reduce_scatter:
 *     the sum of recvcounts, which is what each rank sends), but for
 *     Scatter(v), whose send side exists only at the root, the receive
 *     side; with MPI_IN_PLACE the block that stays in place instead.
 * A call that fails records 0 bytes. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_mpicalls.h"
#include "sp_recorder.h"

#ifdef SP_HAVE_MPI
#include <sched.h>
#include <sys/mman.h>
#include <mpi.h>

#include "sp_mpi.h"

/* X(NAME, PARAMS, ARGS, BYTES): BYTES is an int64_t expression of the
 * parameters, or NONE for the calls that move no data of their own. */
#define NONE ((int64_t)-1)
#define SP_MPICALLS(X)                                                                            \
	/* point to point */                                                                      \
	X(MPI_Send, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,          \
		     MPI_Comm comm), (buf, count, datatype, dest, tag, comm), tsize(count, datatype))     \
	X(MPI_Ssend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,         \
		      MPI_Comm comm), (buf, count, datatype, dest, tag, comm), tsize(count, datatype))    \
	X(MPI_Bsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,         \
		      MPI_Comm comm), (buf, count, datatype, dest, tag, comm), tsize(count, datatype))    \
	X(MPI_Rsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,         \
		      MPI_Comm comm), (buf, count, datatype, dest, tag, comm), tsize(count, datatype))    \
	X(MPI_Recv, (void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, \
		     MPI_Status *status), (buf, count, datatype, source, tag, comm, status),              \
	  tsize(count, datatype))                                                                 \
	X(MPI_Isend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,         \
		      MPI_Comm comm, MPI_Request *request), (buf, count, datatype, dest, tag, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Issend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,        \
		       MPI_Comm comm, MPI_Request *request), (buf, count, datatype, dest, tag, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Ibsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,        \
		       MPI_Comm comm, MPI_Request *request), (buf, count, datatype, dest, tag, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Irsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,        \
		       MPI_Comm comm, MPI_Request *request), (buf, count, datatype, dest, tag, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Irecv, (void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, \
		      MPI_Request *request), (buf, count, datatype, source, tag, comm, request),          \
	  tsize(count, datatype))                                                                 \
	X(MPI_Sendrecv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,       \
			 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source,    \
			 int recvtag, MPI_Comm comm, MPI_Status *status),                                 \
	  (sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, \
	   comm, status), tsize(sendcount, sendtype) + tsize(recvcount, recvtype))                \
	X(MPI_Sendrecv_replace, (void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, \
				 int source, int recvtag, MPI_Comm comm, MPI_Status *status),             \
	  (buf, count, datatype, dest, sendtag, source, recvtag, comm, status), 2 * tsize(count, datatype)) \
	X(MPI_Probe, (int source, int tag, MPI_Comm comm, MPI_Status *status),                     \
	  (source, tag, comm, status), NONE)                                                      \
	X(MPI_Iprobe, (int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status),         \
	  (source, tag, comm, flag, status), NONE)                                                \
	X(MPI_Mprobe, (int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status), \
	  (source, tag, comm, message, status), NONE)                                             \
	X(MPI_Improbe, (int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,       \
			MPI_Status *status), (source, tag, comm, flag, message, status), NONE)            \
	X(MPI_Mrecv, (void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status), \
	  (buf, count, type, message, status), tsize(count, type))                                \
	X(MPI_Imrecv, (void *buf, int count, MPI_Datatype type, MPI_Message *message,              \
		       MPI_Request *request), (buf, count, type, message, request), tsize(count, type)) \
	/* collectives */                                                                         \
	X(MPI_Barrier, (MPI_Comm comm), (comm), NONE)                                             \
	X(MPI_Ibarrier, (MPI_Comm comm, MPI_Request *request), (comm, request), NONE)             \
	X(MPI_Bcast, (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm),    \
	  (buffer, count, datatype, root, comm), tsize(count, datatype))                          \
	X(MPI_Ibcast, (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,    \
		       MPI_Request *request), (buffer, count, datatype, root, comm, request),             \
	  tsize(count, datatype))                                                                 \
	X(MPI_Reduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,       \
		       MPI_Op op, int root, MPI_Comm comm),                                              \
	  (sendbuf, recvbuf, count, datatype, op, root, comm), tsize(count, datatype))            \
	X(MPI_Ireduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,      \
			MPI_Op op, int root, MPI_Comm comm, MPI_Request *request),                        \
	  (sendbuf, recvbuf, count, datatype, op, root, comm, request), tsize(count, datatype))   \
	X(MPI_Allreduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,    \
			  MPI_Op op, MPI_Comm comm),                                                      \
	  (sendbuf, recvbuf, count, datatype, op, comm), tsize(count, datatype))                  \
	X(MPI_Iallreduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,   \
			   MPI_Op op, MPI_Comm comm, MPI_Request *request),                               \
	  (sendbuf, recvbuf, count, datatype, op, comm, request), tsize(count, datatype))         \
	X(MPI_Scan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,         \
		     MPI_Op op, MPI_Comm comm),                                                          \
	  (sendbuf, recvbuf, count, datatype, op, comm), tsize(count, datatype))                  \
	X(MPI_Exscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,       \
		       MPI_Op op, MPI_Comm comm),                                                        \
	  (sendbuf, recvbuf, count, datatype, op, comm), tsize(count, datatype))                  \
	X(MPI_Reduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[],         \
			       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),                          \
	  (sendbuf, recvbuf, recvcounts, datatype, op, comm),                                     \
	  vsize(recvcounts, comm_size(comm), datatype))                                           \
	X(MPI_Reduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount,            \
				     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),                    \
	  (sendbuf, recvbuf, recvcount, datatype, op, comm),                                      \
	  tsize(recvcount, datatype) * comm_size(comm))                                           \
	X(MPI_Gather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,   \
		       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),                   \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),               \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype) : tsize(sendcount, sendtype))      \
	X(MPI_Igather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,  \
			int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,                    \
			MPI_Request *request),                                                            \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request),      \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype) : tsize(sendcount, sendtype))      \
	X(MPI_Gatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,  \
			const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,      \
			MPI_Comm comm),                                                                   \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm),      \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcounts[comm_rank(comm)], recvtype)                  \
				  : tsize(sendcount, sendtype))                                           \
	X(MPI_Scatter, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,  \
			int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),                   \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),               \
	  recvbuf == MPI_IN_PLACE ? tsize(sendcount, sendtype) : tsize(recvcount, recvtype))      \
	X(MPI_Iscatter, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, \
			 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,                   \
			 MPI_Request *request),                                                           \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request),      \
	  recvbuf == MPI_IN_PLACE ? tsize(sendcount, sendtype) : tsize(recvcount, recvtype))      \
	X(MPI_Scatterv, (const void *sendbuf, const int sendcounts[], const int displs[],          \
			 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,      \
			 int root, MPI_Comm comm),                                                        \
	  (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm),      \
	  recvbuf == MPI_IN_PLACE ? tsize(sendcounts[comm_rank(comm)], sendtype)                  \
				  : tsize(recvcount, recvtype))                                           \
	X(MPI_Allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, \
			  int recvcount, MPI_Datatype recvtype, MPI_Comm comm),                           \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),                     \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype) : tsize(sendcount, sendtype))      \
	X(MPI_Iallgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,              \
			   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,            \
			   MPI_Request *request),                                                         \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),            \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype) : tsize(sendcount, sendtype))      \
	X(MPI_Allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,              \
			   void *recvbuf, const int recvcounts[], const int displs[],                     \
			   MPI_Datatype recvtype, MPI_Comm comm),                                         \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm),            \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcounts[comm_rank(comm)], recvtype)                  \
				  : tsize(sendcount, sendtype))                                           \
	X(MPI_Alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, \
			 int recvcount, MPI_Datatype recvtype, MPI_Comm comm),                            \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),                     \
	  peers(comm) * (sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype)                 \
						      : tsize(sendcount, sendtype)))                      \
	X(MPI_Ialltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,               \
			  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,             \
			  MPI_Request *request),                                                          \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),            \
	  peers(comm) * (sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype)                 \
						      : tsize(sendcount, sendtype)))                      \
	X(MPI_Alltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[],        \
			  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],                   \
			  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm),                     \
	  (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm), \
	  sendbuf == MPI_IN_PLACE ? vsize(recvcounts, peers(comm), recvtype)                  \
				  : vsize(sendcounts, peers(comm), sendtype))                         \
	X(MPI_Iscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,        \
		      MPI_Op op, MPI_Comm comm, MPI_Request *request),                                   \
	  (sendbuf, recvbuf, count, datatype, op, comm, request), tsize(count, datatype))         \
	X(MPI_Iexscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,      \
			MPI_Op op, MPI_Comm comm, MPI_Request *request),                                  \
	  (sendbuf, recvbuf, count, datatype, op, comm, request), tsize(count, datatype))         \
	X(MPI_Ireduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[],        \
				MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request),   \
	  (sendbuf, recvbuf, recvcounts, datatype, op, comm, request),                            \
	  vsize(recvcounts, comm_size(comm), datatype))                                           \
	X(MPI_Ireduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount,           \
				      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,                    \
				      MPI_Request *request),                                              \
	  (sendbuf, recvbuf, recvcount, datatype, op, comm, request),                             \
	  tsize(recvcount, datatype) * comm_size(comm))                                           \
	X(MPI_Igatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, \
			 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,     \
			 MPI_Comm comm, MPI_Request *request),                                            \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, request), \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcounts[comm_rank(comm)], recvtype)                  \
				  : tsize(sendcount, sendtype))                                           \
	X(MPI_Iscatterv, (const void *sendbuf, const int sendcounts[], const int displs[],         \
			  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,     \
			  int root, MPI_Comm comm, MPI_Request *request),                                 \
	  (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, request), \
	  recvbuf == MPI_IN_PLACE ? tsize(sendcounts[comm_rank(comm)], sendtype)                  \
				  : tsize(recvcount, recvtype))                                           \
	X(MPI_Iallgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,             \
			    void *recvbuf, const int recvcounts[], const int displs[],                    \
			    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request),                  \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request),   \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcounts[comm_rank(comm)], recvtype)                  \
				  : tsize(sendcount, sendtype))                                           \
	X(MPI_Ialltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[],       \
			   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],                  \
			   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,                     \
			   MPI_Request *request),                                                         \
	  (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,  \
	   request),                                                                              \
	  sendbuf == MPI_IN_PLACE ? vsize(recvcounts, peers(comm), recvtype)                      \
				  : vsize(sendcounts, peers(comm), sendtype))                             \
	X(MPI_Alltoallw, (const void *sendbuf, const int sendcounts[], const int sdispls[],        \
			  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],          \
			  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm),            \
	  (sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm), \
	  sendbuf == MPI_IN_PLACE ? wsize(recvcounts, recvtypes, peers(comm))                     \
				  : wsize(sendcounts, sendtypes, peers(comm)))                            \
	/* persistent requests */                                                                 \
	X(MPI_Start, (MPI_Request *request), (request), NONE)                                     \
	X(MPI_Startall, (int count, MPI_Request array_of_requests[]), (count, array_of_requests), NONE) \
	/* completion */                                                                          \
	X(MPI_Wait, (MPI_Request *request, MPI_Status *status), (request, status), NONE)          \
	X(MPI_Waitall, (int count, MPI_Request array_of_requests[], MPI_Status *array_of_statuses), \
	  (count, array_of_requests, array_of_statuses), NONE)                                    \
	X(MPI_Waitany, (int count, MPI_Request array_of_requests[], int *index, MPI_Status *status), \
	  (count, array_of_requests, index, status), NONE)                                        \
	X(MPI_Waitsome, (int incount, MPI_Request array_of_requests[], int *outcount,              \
			 int array_of_indices[], MPI_Status array_of_statuses[]),                         \
	  (incount, array_of_requests, outcount, array_of_indices, array_of_statuses), NONE)      \
	X(MPI_Test, (MPI_Request *request, int *flag, MPI_Status *status), (request, flag, status), NONE) \
	X(MPI_Testall, (int count, MPI_Request array_of_requests[], int *flag,                     \
			MPI_Status array_of_statuses[]),                                                  \
	  (count, array_of_requests, flag, array_of_statuses), NONE)                              \
	X(MPI_Testany, (int count, MPI_Request array_of_requests[], int *index, int *flag,         \
			MPI_Status *status), (count, array_of_requests, index, flag, status), NONE)       \
	X(MPI_Testsome, (int incount, MPI_Request array_of_requests[], int *outcount,              \
			 int array_of_indices[], MPI_Status array_of_statuses[]),                         \
	  (incount, array_of_requests, outcount, array_of_indices, array_of_statuses), NONE)      \
	/* one-sided */                                                                           \
	X(MPI_Put, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,       \
		    int target_rank, MPI_Aint target_disp, int target_count,                             \
		    MPI_Datatype target_datatype, MPI_Win win),                                          \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, win), tsize(origin_count, origin_datatype))                           \
	X(MPI_Get, (void *origin_addr, int origin_count, MPI_Datatype origin_datatype,             \
		    int target_rank, MPI_Aint target_disp, int target_count,                             \
		    MPI_Datatype target_datatype, MPI_Win win),                                          \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, win), tsize(origin_count, origin_datatype))                           \
	X(MPI_Accumulate, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, \
			   int target_rank, MPI_Aint target_disp, int target_count,                       \
			   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win),                         \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, op, win), tsize(origin_count, origin_datatype))                       \
	X(MPI_Get_accumulate, (const void *origin_addr, int origin_count,                          \
			       MPI_Datatype origin_datatype, void *result_addr, int result_count,         \
			       MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,       \
			       int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win),   \
	  (origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, \
	   target_rank, target_disp, target_count, target_datatype, op, win),                     \
	  tsize(origin_count, origin_datatype) + tsize(result_count, result_datatype))            \
	X(MPI_Rput, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,      \
		     int target_rank, MPI_Aint target_disp, int target_count,                             \
		     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request),                    \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, win, request), tsize(origin_count, origin_datatype))                  \
	X(MPI_Rget, (void *origin_addr, int origin_count, MPI_Datatype origin_datatype,            \
		     int target_rank, MPI_Aint target_disp, int target_count,                             \
		     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request),                    \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, win, request), tsize(origin_count, origin_datatype))                  \
	X(MPI_Raccumulate, (const void *origin_addr, int origin_count,                             \
			    MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,          \
			    int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,       \
			    MPI_Request *request),                                                        \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, op, win, request), tsize(origin_count, origin_datatype))              \
	X(MPI_Fetch_and_op, (const void *origin_addr, void *result_addr, MPI_Datatype datatype,    \
			     int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win),              \
	  (origin_addr, result_addr, datatype, target_rank, target_disp, op, win),                \
	  2 * tsize(1, datatype))                                                                 \
	X(MPI_Compare_and_swap, (const void *origin_addr, const void *compare_addr,                \
				 void *result_addr, MPI_Datatype datatype, int target_rank,               \
				 MPI_Aint target_disp, MPI_Win win),                                      \
	  (origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp, win),      \
	  2 * tsize(1, datatype))                                                                 \
	X(MPI_Win_fence, (int assert_, MPI_Win win), (assert_, win), NONE)                        \
	X(MPI_Win_lock, (int lock_type, int rank, int assert_, MPI_Win win),                      \
	  (lock_type, rank, assert_, win), NONE)                                                  \
	X(MPI_Win_unlock, (int rank, MPI_Win win), (rank, win), NONE)                             \
	X(MPI_Win_lock_all, (int assert_, MPI_Win win), (assert_, win), NONE)                     \
	X(MPI_Win_unlock_all, (MPI_Win win), (win), NONE)                                         \
	X(MPI_Win_flush, (int rank, MPI_Win win), (rank, win), NONE)                              \
	X(MPI_Win_flush_all, (MPI_Win win), (win), NONE)                                          \
	X(MPI_Win_start, (MPI_Group group, int assert_, MPI_Win win), (group, assert_, win), NONE) \
	X(MPI_Win_complete, (MPI_Win win), (win), NONE)                                           \
	X(MPI_Win_post, (MPI_Group group, int assert_, MPI_Win win), (group, assert_, win), NONE) \
	X(MPI_Win_wait, (MPI_Win win), (win), NONE)

enum {
#define SP_ID(NAME, PARAMS, ARGS, BYTES) ID_##NAME,
	SP_MPICALLS(SP_ID)
#undef SP_ID
	NCALLS
};

static const char *const call_names[NCALLS] = {
#define SP_NAME(NAME, PARAMS, ARGS, BYTES) #NAME,
	SP_MPICALLS(SP_NAME)
#undef SP_NAME
};

/* Each function's bytes expression as text: "NONE" for those without a
 * `bytes` column (read once, when recording starts). */
static const char *const bytes_of[NCALLS] = {
#define SP_BYTES(NAME, PARAMS, ARGS, BYTES) #BYTES,
	SP_MPICALLS(SP_BYTES)
#undef SP_BYTES
};

/* One intercepted function's calls; the lock guards the buffer while
 * recording is on. Only the events are written per call (no running
 * statistics: the end of the session computes them from the events). */
struct call {
	atomic_flag lock;
	struct sp_buf buf;
};

static struct call calls[NCALLS];
static int recording;                  /* read by every wrapper: the mode's one branch */
static sp_mpicalls_lane_fn lane_of;    /* NULL: no lanes */

/* The library's functions, looked up by name in the libmpi in use. A name
 * that cannot be found (no libmpi is loaded, yet MPI is called) is said
 * once, through *said (one flag per name), and the call fails with
 * MPI_ERR_INTERN; it is looked up again at the next call (a library that
 * mpi4py loads later is found then). */
static void *library_symbol(const char *name, int *said)
{
	void *f = sp_mpi_symbol(name);
	if (!f && !__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "scope-profiler: %s not found in the MPI library\n", name);
	return f;
}


/* The helpers the byte counts use (never recorded). */
static int (*p_type_size)(MPI_Datatype, int *);
static int (*p_comm_size)(MPI_Comm, int *);
static int (*p_comm_rank)(MPI_Comm, int *);
static int (*p_test_inter)(MPI_Comm, int *);
static int (*p_remote_size)(MPI_Comm, int *);

static int64_t tsize(int64_t count, MPI_Datatype type)
{
	static int said;
	int size = 0;
	if (count <= 0)
		return 0;
	if (!p_type_size && !(*(void **)&p_type_size = library_symbol("PMPI_Type_size", &said)))
		return 0;
	if (p_type_size(type, &size) != MPI_SUCCESS || size < 0)
		return 0;
	return (int64_t)count * size;
}

static int64_t comm_size(MPI_Comm comm)
{
	static int said;
	int n = 0;
	if (!p_comm_size && !(*(void **)&p_comm_size = library_symbol("PMPI_Comm_size", &said)))
		return 0;
	return p_comm_size(comm, &n) == MPI_SUCCESS && n > 0 ? n : 0;
}

/* The ranks a call on comm exchanges with, the length of its per-peer
 * arrays (Alltoall's blocks, Alltoallv's counts): the communicator's size,
 * or an intercommunicator's remote group. (Reduce_scatter's recvcounts
 * and Reduce_scatter_block's blocks are per rank of the local group, which
 * scatters the result, on either kind.) */
static int64_t peers(MPI_Comm comm)
{
	static int said, said_remote;
	int inter = 0, n = 0;
	if (!p_test_inter &&
	    !(*(void **)&p_test_inter = library_symbol("PMPI_Comm_test_inter", &said)))
		return 0;
	if (p_test_inter(comm, &inter) != MPI_SUCCESS)
		return 0;
	if (!inter)
		return comm_size(comm);
	if (!p_remote_size &&
	    !(*(void **)&p_remote_size = library_symbol("PMPI_Comm_remote_size", &said_remote)))
		return 0;
	return p_remote_size(comm, &n) == MPI_SUCCESS && n > 0 ? n : 0;
}

static int comm_rank(MPI_Comm comm)
{
	static int said;
	int r = 0;
	if (!p_comm_rank && !(*(void **)&p_comm_rank = library_symbol("PMPI_Comm_rank", &said)))
		return 0;
	return p_comm_rank(comm, &r) == MPI_SUCCESS && r >= 0 ? r : 0;
}

/* The sum of counts[0 .. n) times the size of type. */
static int64_t vsize(const int *counts, int64_t n, MPI_Datatype type)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += tsize(counts[i], type);
	return sum;
}

/* The sum of counts[i] times the size of types[i], i in [0, n). */
static int64_t wsize(const int *counts, const MPI_Datatype *types, int64_t n)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += tsize(counts[i], types[i]);
	return sum;
}

/* After a buffer grew: its columns, once they are mappings of their own
 * (sp_recorder.h), in huge pages where the kernel offers them on request
 * (transparent huge pages on madvise): a page fault per 2 MiB of events
 * instead of per 4 KiB, which on a virtual machine was half the cost of
 * recording a call into fresh memory (make bench). Only here: a region's
 * columns elsewhere keep their 4 KiB pages and tight memory. Advice only. */
static void grew(struct sp_buf *b)
{
#ifdef MADV_HUGEPAGE
	if (!b->mapped)
		return;
	madvise(b->starts, b->cap * sizeof *b->starts, MADV_HUGEPAGE);
	madvise(b->ends, b->cap * sizeof *b->ends, MADV_HUGEPAGE);
	if (b->keep_lanes)
		madvise(b->lanes, b->cap * sizeof *b->lanes, MADV_HUGEPAGE);
	if (b->keep_values)
		madvise(b->values, b->cap * sizeof *b->values, MADV_HUGEPAGE);
#else
	(void)b;
#endif
}

static void lock(struct call *c)
{
	while (atomic_flag_test_and_set_explicit(&c->lock, memory_order_acquire))
		sched_yield();
}

static void unlock(struct call *c)
{
	atomic_flag_clear_explicit(&c->lock, memory_order_release);
}

/* One call of function id from t0 to t1, moving bytes (kept when the
 * function has a `bytes` column). */
static void record(int id, int64_t t0, int64_t t1, int64_t bytes)
{
	sp_mpicalls_lane_fn lane_fn = lane_of;
	/* The lane is found before the lock (a thread's first may take the
	 * GIL), and only while recording (not once the interpreter ends). */
	int32_t lane = lane_fn && __atomic_load_n(&recording, __ATOMIC_RELAXED) ? lane_fn() : 0;
	struct call *c = &calls[id];
	lock(c);
	if (__atomic_load_n(&recording, __ATOMIC_RELAXED)) {
		size_t cap = c->buf.cap;
		ptrdiff_t slot = sp_buf_reserve(&c->buf);
		if (__builtin_expect(c->buf.cap != cap, 0))
			grew(&c->buf);
		if (slot >= 0) {
			c->buf.starts[slot] = t0;
			c->buf.ends[slot] = t1;
			if (c->buf.keep_lanes)
				c->buf.lanes[slot] = lane;
			if (c->buf.keep_values)
				c->buf.values[slot] = bytes;
		}
	}
	unlock(c);
}

/* FN, recorded as the region of function ID. */
#define SP_WRAP_AS(FN, ID, PARAMS, ARGS, BYTES)                                                   \
	static int resolve_##FN PARAMS;                                                           \
	static int(*p_##FN) PARAMS = resolve_##FN;                                                \
	static int resolve_##FN PARAMS                                                            \
	{                                                                                         \
		static int said;                                                                  \
		void *f = library_symbol("P" #FN, &said);                                         \
		if (!f)                                                                           \
			return MPI_ERR_INTERN;                                                    \
		__atomic_store_n((void **)&p_##FN, f, __ATOMIC_RELAXED);                          \
		return p_##FN ARGS;                                                               \
	}                                                                                         \
	int FN PARAMS                                                                             \
	{                                                                                         \
		if (__builtin_expect(!__atomic_load_n(&recording, __ATOMIC_RELAXED), 1))          \
			return p_##FN ARGS;                                                       \
		int64_t t0 = sp_clock_ns();                                                       \
		int rc = p_##FN ARGS;                                                             \
		int64_t t1 = sp_clock_ns();                                                       \
		int64_t b = BYTES;                                                                \
		(void)b;                                                                          \
		record(ID, t0, t1, rc == MPI_SUCCESS ? b : 0);                                    \
		return rc;                                                                        \
	}
#define SP_WRAP(NAME, PARAMS, ARGS, BYTES) SP_WRAP_AS(NAME, ID_##NAME, PARAMS, ARGS, BYTES)
SP_MPICALLS(SP_WRAP)
#undef SP_WRAP

#if MPI_VERSION >= 4
/* MPI 4's large-count forms (NAME_c: MPI_Count counts, MPI_Aint
 * displacements), which mpi4py 4 calls where the library has them (Open
 * MPI 6): recorded in the region of the plain function. */
static int64_t vsize_c(const MPI_Count *counts, int64_t n, MPI_Datatype type)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += tsize(counts[i], type);
	return sum;
}

static int64_t wsize_c(const MPI_Count *counts, const MPI_Datatype *types, int64_t n)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += tsize(counts[i], types[i]);
	return sum;
}

#define SP_MPICALLS_C(X)                                                                          \
	X(MPI_Send, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,    \
		     MPI_Comm comm), (buf, count, datatype, dest, tag, comm), tsize(count, datatype))     \
	X(MPI_Ssend, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,   \
		      MPI_Comm comm), (buf, count, datatype, dest, tag, comm), tsize(count, datatype))    \
	X(MPI_Bsend, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,   \
		      MPI_Comm comm), (buf, count, datatype, dest, tag, comm), tsize(count, datatype))    \
	X(MPI_Rsend, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,   \
		      MPI_Comm comm), (buf, count, datatype, dest, tag, comm), tsize(count, datatype))    \
	X(MPI_Recv, (void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,        \
		     MPI_Comm comm, MPI_Status *status), (buf, count, datatype, source, tag, comm, status), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Isend, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,   \
		      MPI_Comm comm, MPI_Request *request), (buf, count, datatype, dest, tag, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Issend, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,  \
		       MPI_Comm comm, MPI_Request *request), (buf, count, datatype, dest, tag, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Ibsend, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,  \
		       MPI_Comm comm, MPI_Request *request), (buf, count, datatype, dest, tag, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Irsend, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,  \
		       MPI_Comm comm, MPI_Request *request), (buf, count, datatype, dest, tag, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Irecv, (void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,       \
		      MPI_Comm comm, MPI_Request *request), (buf, count, datatype, source, tag, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Sendrecv, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, \
			 int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,          \
			 int source, int recvtag, MPI_Comm comm, MPI_Status *status),                     \
	  (sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, \
	   comm, status), tsize(sendcount, sendtype) + tsize(recvcount, recvtype))                \
	X(MPI_Sendrecv_replace, (void *buf, MPI_Count count, MPI_Datatype datatype, int dest,       \
				 int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status), \
	  (buf, count, datatype, dest, sendtag, source, recvtag, comm, status), 2 * tsize(count, datatype)) \
	X(MPI_Mrecv, (void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,      \
		      MPI_Status *status), (buf, count, datatype, message, status), tsize(count, datatype)) \
	X(MPI_Imrecv, (void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,     \
		       MPI_Request *request), (buf, count, datatype, message, request),                   \
	  tsize(count, datatype))                                                                 \
	X(MPI_Bcast, (void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm), \
	  (buffer, count, datatype, root, comm), tsize(count, datatype))                          \
	X(MPI_Ibcast, (void *buffer, MPI_Count count, MPI_Datatype datatype, int root,             \
		       MPI_Comm comm, MPI_Request *request), (buffer, count, datatype, root, comm, request), \
	  tsize(count, datatype))                                                                 \
	X(MPI_Reduce, (const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, \
		       MPI_Op op, int root, MPI_Comm comm),                                              \
	  (sendbuf, recvbuf, count, datatype, op, root, comm), tsize(count, datatype))            \
	X(MPI_Ireduce, (const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, \
			MPI_Op op, int root, MPI_Comm comm, MPI_Request *request),                        \
	  (sendbuf, recvbuf, count, datatype, op, root, comm, request), tsize(count, datatype))   \
	X(MPI_Allreduce, (const void *sendbuf, void *recvbuf, MPI_Count count,                     \
			  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),                               \
	  (sendbuf, recvbuf, count, datatype, op, comm), tsize(count, datatype))                  \
	X(MPI_Iallreduce, (const void *sendbuf, void *recvbuf, MPI_Count count,                    \
			   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request),        \
	  (sendbuf, recvbuf, count, datatype, op, comm, request), tsize(count, datatype))         \
	X(MPI_Scan, (const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,   \
		     MPI_Op op, MPI_Comm comm),                                                          \
	  (sendbuf, recvbuf, count, datatype, op, comm), tsize(count, datatype))                  \
	X(MPI_Exscan, (const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, \
		       MPI_Op op, MPI_Comm comm),                                                        \
	  (sendbuf, recvbuf, count, datatype, op, comm), tsize(count, datatype))                  \
	X(MPI_Reduce_scatter, (const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],   \
			       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),                          \
	  (sendbuf, recvbuf, recvcounts, datatype, op, comm),                                     \
	  vsize_c(recvcounts, comm_size(comm), datatype))                                         \
	X(MPI_Reduce_scatter_block, (const void *sendbuf, void *recvbuf, MPI_Count recvcount,      \
				     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),                    \
	  (sendbuf, recvbuf, recvcount, datatype, op, comm),                                      \
	  tsize(recvcount, datatype) * comm_size(comm))                                           \
	X(MPI_Gather, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,            \
		       void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,              \
		       MPI_Comm comm),                                                                   \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),               \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype) : tsize(sendcount, sendtype))      \
	X(MPI_Igather, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,           \
			void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,              \
			MPI_Comm comm, MPI_Request *request),                                             \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request),      \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype) : tsize(sendcount, sendtype))      \
	X(MPI_Gatherv, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,           \
			void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],             \
			MPI_Datatype recvtype, int root, MPI_Comm comm),                                  \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm),      \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcounts[comm_rank(comm)], recvtype)                  \
				  : tsize(sendcount, sendtype))                                           \
	X(MPI_Scatter, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,           \
			void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,              \
			MPI_Comm comm),                                                                   \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),               \
	  recvbuf == MPI_IN_PLACE ? tsize(sendcount, sendtype) : tsize(recvcount, recvtype))      \
	X(MPI_Iscatter, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,          \
			 void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,             \
			 MPI_Comm comm, MPI_Request *request),                                            \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request),      \
	  recvbuf == MPI_IN_PLACE ? tsize(sendcount, sendtype) : tsize(recvcount, recvtype))      \
	X(MPI_Scatterv, (const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[], \
			 MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,                       \
			 MPI_Datatype recvtype, int root, MPI_Comm comm),                                 \
	  (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm),      \
	  recvbuf == MPI_IN_PLACE ? tsize(sendcounts[comm_rank(comm)], sendtype)                  \
				  : tsize(recvcount, recvtype))                                           \
	X(MPI_Allgather, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,         \
			  void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm),      \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),                     \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype) : tsize(sendcount, sendtype))      \
	X(MPI_Iallgather, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,        \
			   void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,      \
			   MPI_Request *request),                                                         \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),            \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype) : tsize(sendcount, sendtype))      \
	X(MPI_Allgatherv, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,        \
			   void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],          \
			   MPI_Datatype recvtype, MPI_Comm comm),                                         \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm),            \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcounts[comm_rank(comm)], recvtype)                  \
				  : tsize(sendcount, sendtype))                                           \
	X(MPI_Alltoall, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,          \
			 void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm),       \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),                     \
	  peers(comm) * (sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype)                 \
						      : tsize(sendcount, sendtype)))                      \
	X(MPI_Ialltoall, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,         \
			  void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,       \
			  MPI_Request *request),                                                          \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),            \
	  peers(comm) * (sendbuf == MPI_IN_PLACE ? tsize(recvcount, recvtype)                 \
						      : tsize(sendcount, sendtype)))                      \
	X(MPI_Alltoallv, (const void *sendbuf, const MPI_Count sendcounts[],                       \
			  const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,                 \
			  const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype,  \
			  MPI_Comm comm),                                                                 \
	  (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm), \
	  sendbuf == MPI_IN_PLACE ? vsize_c(recvcounts, peers(comm), recvtype)                \
				  : vsize_c(sendcounts, peers(comm), sendtype))                       \
	X(MPI_Put, (const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, \
		    int target_rank, MPI_Aint target_disp, MPI_Count target_count,                       \
		    MPI_Datatype target_datatype, MPI_Win win),                                          \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, win), tsize(origin_count, origin_datatype))                           \
	X(MPI_Get, (void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,       \
		    int target_rank, MPI_Aint target_disp, MPI_Count target_count,                       \
		    MPI_Datatype target_datatype, MPI_Win win),                                          \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, win), tsize(origin_count, origin_datatype))                           \
	X(MPI_Accumulate, (const void *origin_addr, MPI_Count origin_count,                        \
			   MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,           \
			   MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win), \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, op, win), tsize(origin_count, origin_datatype))                       \
	X(MPI_Get_accumulate, (const void *origin_addr, MPI_Count origin_count,                    \
			       MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,   \
			       MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,       \
			       MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,           \
			       MPI_Win win),                                                              \
	  (origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, \
	   target_rank, target_disp, target_count, target_datatype, op, win),                     \
	  tsize(origin_count, origin_datatype) + tsize(result_count, result_datatype))            \
	X(MPI_Iscan, (const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,  \
		      MPI_Op op, MPI_Comm comm, MPI_Request *request),                                   \
	  (sendbuf, recvbuf, count, datatype, op, comm, request), tsize(count, datatype))         \
	X(MPI_Iexscan, (const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, \
			MPI_Op op, MPI_Comm comm, MPI_Request *request),                                  \
	  (sendbuf, recvbuf, count, datatype, op, comm, request), tsize(count, datatype))         \
	X(MPI_Ireduce_scatter, (const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],  \
				MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request),   \
	  (sendbuf, recvbuf, recvcounts, datatype, op, comm, request),                            \
	  vsize_c(recvcounts, comm_size(comm), datatype))                                         \
	X(MPI_Ireduce_scatter_block, (const void *sendbuf, void *recvbuf, MPI_Count recvcount,     \
				      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,                    \
				      MPI_Request *request),                                              \
	  (sendbuf, recvbuf, recvcount, datatype, op, comm, request),                             \
	  tsize(recvcount, datatype) * comm_size(comm))                                           \
	X(MPI_Igatherv, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,          \
			 void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],            \
			 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request),           \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, request), \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcounts[comm_rank(comm)], recvtype)                  \
				  : tsize(sendcount, sendtype))                                           \
	X(MPI_Iscatterv, (const void *sendbuf, const MPI_Count sendcounts[],                       \
			  const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,                  \
			  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,            \
			  MPI_Request *request),                                                          \
	  (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, request), \
	  recvbuf == MPI_IN_PLACE ? tsize(sendcounts[comm_rank(comm)], sendtype)                  \
				  : tsize(recvcount, recvtype))                                           \
	X(MPI_Iallgatherv, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,       \
			    void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],         \
			    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request),                  \
	  (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request),   \
	  sendbuf == MPI_IN_PLACE ? tsize(recvcounts[comm_rank(comm)], recvtype)                  \
				  : tsize(sendcount, sendtype))                                           \
	X(MPI_Ialltoallv, (const void *sendbuf, const MPI_Count sendcounts[],                      \
			   const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,                \
			   const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype, \
			   MPI_Comm comm, MPI_Request *request),                                          \
	  (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,  \
	   request),                                                                              \
	  sendbuf == MPI_IN_PLACE ? vsize_c(recvcounts, peers(comm), recvtype)                    \
				  : vsize_c(sendcounts, peers(comm), sendtype))                           \
	X(MPI_Alltoallw, (const void *sendbuf, const MPI_Count sendcounts[],                       \
			  const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,        \
			  const MPI_Count recvcounts[], const MPI_Aint rdispls[],                         \
			  const MPI_Datatype recvtypes[], MPI_Comm comm),                                 \
	  (sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm), \
	  sendbuf == MPI_IN_PLACE ? wsize_c(recvcounts, recvtypes, peers(comm))                   \
				  : wsize_c(sendcounts, sendtypes, peers(comm)))                          \
	X(MPI_Rput, (const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, \
		     int target_rank, MPI_Aint target_disp, MPI_Count target_count,                       \
		     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request),                    \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, win, request), tsize(origin_count, origin_datatype))                  \
	X(MPI_Rget, (void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,      \
		     int target_rank, MPI_Aint target_disp, MPI_Count target_count,                       \
		     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request),                    \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, win, request), tsize(origin_count, origin_datatype))                  \
	X(MPI_Raccumulate, (const void *origin_addr, MPI_Count origin_count,                       \
			    MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,          \
			    MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, \
			    MPI_Request *request),                                                        \
	  (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,    \
	   target_datatype, op, win, request), tsize(origin_count, origin_datatype))

#define SP_WRAP_C(BASE, PARAMS, ARGS, BYTES) SP_WRAP_AS(BASE##_c, ID_##BASE, PARAMS, ARGS, BYTES)
SP_MPICALLS_C(SP_WRAP_C)
#undef SP_WRAP_C
#endif
#undef SP_WRAP_AS

int sp_mpicalls_built(void)
{
	return 1;
}

size_t sp_mpicalls_count(void)
{
	return NCALLS;
}

int sp_mpicalls_start(size_t cap, sp_mpicalls_lane_fn lane)
{
	sp_mpicalls_stop();
	for (int i = 0; i < NCALLS; i++) {
		struct call *c = &calls[i];
		if (!c->buf.limit)
			sp_buf_init(&c->buf, cap);
		c->buf.limit = cap ? cap : 1;
		if (lane && sp_buf_keep_lanes(&c->buf) != 0)
			return -1;
		if (strcmp(bytes_of[i], "NONE") != 0 && sp_buf_keep_values(&c->buf, SP_VALUES_BYTES) != 0)
			return -1;
	}
	lane_of = lane;
	__atomic_store_n(&recording, 1, __ATOMIC_RELEASE);
	return 0;
}

void sp_mpicalls_stop(void)
{
	__atomic_store_n(&recording, 0, __ATOMIC_SEQ_CST);
	/* A call that passed the check before is recording now, or will find
	 * recording off under its lock. */
	for (int i = 0; i < NCALLS; i++) {
		lock(&calls[i]);
		unlock(&calls[i]);
	}
}

void sp_mpicalls_reset(void)
{
	sp_mpicalls_stop();
	for (int i = 0; i < NCALLS; i++) {
		struct call *c = &calls[i];
		size_t cap = c->buf.limit;
		sp_buf_free(&c->buf);
		sp_buf_init(&c->buf, cap);
	}
}

/* The name of function fn's region: fn itself, unless the rank already
 * has a region of that name (the script's own, e.g. a region named
 * "MPI_Allreduce" around its allreduce): then "fn [mpi]", or "fn [mpi N]"
 * from N = 2 while that is taken too. NULL when out of memory. */
static char *region_name(const struct sp_rank *rk, const char *fn)
{
	if (!sp_rank_has_region(rk, fn))
		return strdup(fn);
	size_t len = strlen(fn) + 32;
	char *name = malloc(len);
	if (!name)
		return NULL;
	snprintf(name, len, "%s [mpi]", fn);
	for (unsigned long n = 2; sp_rank_has_region(rk, name); n++)
		snprintf(name, len, "%s [mpi %lu]", fn, n);
	return name;
}

long sp_mpicalls_add(struct sp_rank *rk)
{
	long added = 0;
	for (int i = 0; i < NCALLS; i++) {
		struct call *c = &calls[i];
		rk->dropped += (int64_t)c->buf.dropped;
		if (c->buf.n == 0)         /* every call lost: counted in the rank's only */
			continue;
		char *name = region_name(rk, call_names[i]);
		if (!name)
			return -1;
		struct sp_region_data *rd = &rk->regions[rk->nregions];
		memset(rd, 0, sizeof *rd);
		rd->name = name;
		rk->nregions++;
		added++;
		rd->dropped = (int64_t)c->buf.dropped;
		rd->starts = c->buf.starts;
		rd->ends = c->buf.ends;
		rd->lanes = c->buf.keep_lanes ? c->buf.lanes : NULL;
		rd->owns_events = 0;
		rd->peak_bytes = SP_NO_PEAK;
		if (c->buf.keep_values) {
			int64_t sum = 0;
			rd->values = c->buf.values;
			rd->value_kind = c->buf.keep_values;
			for (size_t k = 0; k < c->buf.n; k++)
				sum = (int64_t)((uint64_t)sum + (uint64_t)rd->values[k]);
			rd->values_total = sum;
		}
		sp_stats_compute(&rd->stats, rd->starts, rd->ends, c->buf.n);
	}
	return added;
}

#else /* no MPI: nothing to intercept */

int sp_mpicalls_built(void)
{
	return 0;
}

size_t sp_mpicalls_count(void)
{
	return 0;
}

int sp_mpicalls_start(size_t cap, sp_mpicalls_lane_fn lane)
{
	(void)cap;
	(void)lane;
	return 0;
}

void sp_mpicalls_stop(void)
{
}

void sp_mpicalls_reset(void)
{
}

long sp_mpicalls_add(struct sp_rank *rk)
{
	(void)rk;
	return 0;
}

#endif
