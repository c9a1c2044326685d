// On-disk frame files, shared by both ends without libprotobuf: the collector's journals
// (OUT/.gpuwatch/rank-R-PID.frames) and the library's spools
// (OUT/.gpuwatch/spool-rank-R-PID.frames) have the same layout, so `gpuwatch report DIR`
// reads both with one reader:
//
//   offset 0   8 bytes  magic "GPUWJRN1"
//   offset 8   u32 LE   journal format version (kJournalVersion)
//   offset 12  u32 LE   flags (JournalFlag bits), rewritten in place by the writer
//   offset 16  frames exactly as on the wire (frame.h: varint length + gpuwatch.wire.Frame),
//              the first one a Hello; a later Hello starts a new connection of that process.
//
// A writer appends whole frames with one write(2) each (or a few whole frames at a time), so
// a process killed at any moment leaves at most one truncated frame at the end; readers
// ignore it. Names are built from validated integers (rank, pid) only.
//
// Checkpoints bound a collector's journal (the library's spools have none). A journal is
// a series of parts, rank-R-PID.frames then rank-R-PID.P.frames (P = 1, 2, ...), and at
// most one checkpoint, rank-R-PID.checkpoint: the rank's interpretation after every frame
// of the parts before its `next_part`. Frames after it are in parts >= next_part, each of
// which opens with the rank's Hello again (a continuation of the open connection, not a
// new one). The checkpoint file:
//
//   offset 0   8 bytes  magic "GPUWCKP1"
//   offset 8   u32 LE   checkpoint format version (kCheckpointVersion)
//   offset 12  u32 LE   next_part
//   offset 16  u64 LE   the highest Batch.seq the checkpoint holds (a later copy is skipped)
//   offset 24  u64 LE   state length N
//   offset 32  u32 LE   CRC-32 of the state
//   offset 36  N bytes  the state (the collector's RankModel, analyze/rank_checkpoint.h)
//
// A writer creates the next part (with its Hello) first, then writes the checkpoint under
// a temporary name and renames it over the old one, then deletes the parts before it: a
// process killed at any instant leaves the old checkpoint and all the parts after it, or
// the new one and all the parts after it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace gpuwatch::wire {

inline constexpr char kJournalMagic[8] = {'G', 'P', 'U', 'W', 'J', 'R', 'N', '1'};
inline constexpr uint32_t kJournalVersion = 1;
inline constexpr size_t kJournalHeaderBytes = 16;
inline constexpr size_t kJournalFlagsOffset = 12;

enum JournalFlag : uint32_t {
  kJournalCapped = 1u << 0,  // the writer stopped at its size cap: frames after it are missing
};

// The subdirectory of a job's output directory that holds journals and spools.
inline constexpr const char* kJournalDir = ".gpuwatch";

inline void PutU32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint32_t GetU32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

// The 16 header bytes for `flags`.
inline void EncodeJournalHeader(unsigned char out[kJournalHeaderBytes], uint32_t flags) {
  std::memcpy(out, kJournalMagic, sizeof kJournalMagic);
  PutU32(out + 8, kJournalVersion);
  PutU32(out + kJournalFlagsOffset, flags);
}

// True when `p` (at least kJournalHeaderBytes long) is a header this code reads.
inline bool DecodeJournalHeader(const unsigned char* p, uint32_t* version, uint32_t* flags) {
  if (std::memcmp(p, kJournalMagic, sizeof kJournalMagic) != 0) return false;
  *version = GetU32(p + 8);
  *flags = GetU32(p + kJournalFlagsOffset);
  return *version == kJournalVersion;
}

inline constexpr char kCheckpointMagic[8] = {'G', 'P', 'U', 'W', 'C', 'K', 'P', '1'};
inline constexpr uint32_t kCheckpointVersion = 1;
inline constexpr size_t kCheckpointHeaderBytes = 36;

inline void PutU64(unsigned char* p, uint64_t v) {
  PutU32(p, static_cast<uint32_t>(v));
  PutU32(p + 4, static_cast<uint32_t>(v >> 32));
}
inline uint64_t GetU64(const unsigned char* p) { return GetU32(p) | static_cast<uint64_t>(GetU32(p + 4)) << 32; }

// File names inside kJournalDir.
inline std::string JournalFileName(int rank, int pid) {
  return "rank-" + std::to_string(rank) + "-" + std::to_string(pid) + ".frames";
}
// Part P > 0 of a journal.
inline std::string JournalPartFileName(int rank, int pid, int part) {
  if (part == 0) return JournalFileName(rank, pid);
  return "rank-" + std::to_string(rank) + "-" + std::to_string(pid) + "." + std::to_string(part) + ".frames";
}
inline std::string CheckpointFileName(int rank, int pid) {
  return "rank-" + std::to_string(rank) + "-" + std::to_string(pid) + ".checkpoint";
}
inline std::string SpoolFileName(int rank, int pid) {
  return "spool-rank-" + std::to_string(rank) + "-" + std::to_string(pid) + ".frames";
}

}  // namespace gpuwatch::wire
