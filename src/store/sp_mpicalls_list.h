/* sp_mpicalls_list.h - the MPI functions run --mpi-calls intercepts
 * (mpicalls.c, its only includer, under SP_HAVE_MPI): one line of
 * SP_MPICALLS each, X(NAME, PARAMS, ARGS, BYTES), and SP_MPICALLS_C the
 * large-count forms of MPI 4 (NAME_c, recorded in NAME's region). The
 * macros name the MPI types and mpicalls.c's byte helpers (tsize, vsize,
 * wsize, comm_size, peers, comm_rank, vsize_c, wsize_c), which need to be
 * defined only where a table is expanded.
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
#ifndef SP_MPICALLS_LIST_H
#define SP_MPICALLS_LIST_H

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

/* MPI 4's large-count forms (MPI_Count counts, MPI_Aint displacements). */
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

#endif
