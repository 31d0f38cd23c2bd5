// Moving a fragmented page list with MPI alone, against one plain message.
//
// The ways of bench/report.md section 12 to move 64 MiB of pages (256 KiB,
// or the KiB of the second argument) whose sender page ids come in runs (all
// consecutive, runs of 8, runs of 1) into consecutive receiver pages: one
// non-blocking message per run (MPI_Isend/MPI_Irecv, then MPI_Waitall), or one
// message of an MPI derived datatype describing the sender's pages
// (MPI_Type_create_hindexed), received as bytes. Rank 1 times each transfer
// from its go message to the end of its receive and prints "time <kind>
// <seconds>"; kinds: 0 plain, 1-3 one message per run (all, 8, 1), 4-6 derived
// datatype (all, 8, 1).
//
//   mpicc -O2 bench/transfer/mpi_layouts.c -o /tmp/mpi_layouts
//   mpirun -np 2 --oversubscribe /tmp/mpi_layouts <repetitions> [page KiB]

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TotalBytes = 64 << 20, Sequences = 8, Tag = 7 };

static int PageBytes, Pages;

// Runs [start[i], start[i] + length[i]) of the sender's pages: those of
// `Sequences` sequences interleaved in runs of `run`, as transfer.py's
// fill_table lays them out.
static int senderRuns(int run, int *start, int *length) {
  int *ids = malloc(sizeof(int) * Pages), count = 0, n = 0;
  for (int b = 0; b < Sequences; ++b)
    for (int j = 0; j < Pages / Sequences; ++j)
      ids[count++] = ((j / run) * Sequences + b) * run + j % run + 1;
  for (int i = 0; i < Pages;) {
    int first = i;
    while (i + 1 < Pages && ids[i + 1] == ids[i] + 1)
      ++i;
    start[n] = first;
    length[n++] = ++i - first;
  }
  // Page ids, not list positions: the runs' first ids.
  for (int r = 0; r < n; ++r)
    start[r] = ids[start[r]];
  free(ids);
  return n;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, go = 0, repetitions = argc > 1 ? atoi(argv[1]) : 9;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PageBytes = (argc > 2 ? atoi(argv[2]) : 256) * 1024;
  Pages = TotalBytes / PageBytes;
  int peer = 1 - rank;
  size_t total = (size_t)Pages * PageBytes;
  char *blocks = aligned_alloc(64, (2 * Pages + 64) * (size_t)PageBytes);
  char *plain = aligned_alloc(64, total);
  memset(blocks, rank + 1, (2 * Pages + 64) * (size_t)PageBytes);
  memset(plain, 1, total);
  char *destination = blocks + (size_t)(Pages + 32) * PageBytes;
  const int runs[3] = {Pages / Sequences, 8, 1};
  MPI_Request *requests = malloc(sizeof(MPI_Request) * Pages);
  int *start = malloc(sizeof(int) * Pages),
      *length = malloc(sizeof(int) * Pages);
  int *bytes = malloc(sizeof(int) * Pages);
  MPI_Aint *displacements = malloc(sizeof(MPI_Aint) * Pages);
  for (int rep = 0; rep < repetitions; ++rep) {
    for (int kind = 0; kind < 7; ++kind) {
      int n = kind ? senderRuns(runs[(kind - 1) % 3], start, length) : 0;
      if (rank == 0) {
        MPI_Recv(&go, 1, MPI_INT, peer, Tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (kind == 0) {
          MPI_Send(plain, (int)total, MPI_BYTE, peer, Tag, MPI_COMM_WORLD);
        } else if (kind <= 3) {
          for (int r = 0; r < n; ++r)
            MPI_Isend(blocks + (size_t)start[r] * PageBytes,
                      length[r] * PageBytes, MPI_BYTE, peer, Tag,
                      MPI_COMM_WORLD, &requests[r]);
          MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
        } else {
          for (int r = 0; r < n; ++r) {
            bytes[r] = length[r] * PageBytes;
            displacements[r] = (MPI_Aint)start[r] * PageBytes;
          }
          MPI_Datatype pages;
          MPI_Type_create_hindexed(n, bytes, displacements, MPI_BYTE, &pages);
          MPI_Type_commit(&pages);
          MPI_Send(blocks, 1, pages, peer, Tag, MPI_COMM_WORLD);
          MPI_Type_free(&pages);
        }
      } else {
        double t0 = MPI_Wtime();
        MPI_Send(&go, 1, MPI_INT, peer, Tag, MPI_COMM_WORLD);
        if (kind == 0) {
          MPI_Recv(plain, (int)total, MPI_BYTE, peer, Tag, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
        } else if (kind <= 3) {
          size_t offset = 0;
          for (int r = 0; r < n; ++r) {
            MPI_Irecv(destination + offset, length[r] * PageBytes, MPI_BYTE,
                      peer, Tag, MPI_COMM_WORLD, &requests[r]);
            offset += (size_t)length[r] * PageBytes;
          }
          MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
        } else {
          MPI_Recv(destination, (int)total, MPI_BYTE, peer, Tag, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
        }
        printf("time %d %g\n", kind, MPI_Wtime() - t0);
      }
    }
  }
  MPI_Finalize();
  return 0;
}
