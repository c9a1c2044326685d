// Writes the seed corpus for fuzz_stream: real frames as the collector receives them
// (Hello, batches with every event kind, names, communicators, drops, activities, a
// heartbeat, a Goodbye), whole streams and pieces of them. Usage: make_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>

#include "frame.h"

namespace wire = gpuwatch::wire;

namespace {

void Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream(dir + "/" + name, std::ios::binary) << std::string(1, '\x07') + bytes;
}

std::string F(const wire::Frame& f) {
  std::string s;
  wire::AppendFrame(f, s);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 1;
  }
  const std::string dir = argv[1];
  wire::Frame hello;
  auto* h = hello.mutable_hello();
  h->set_protocol_version(wire::PROTOCOL_VERSION);
  h->set_job_id("seed-job");
  h->set_rank(1);
  h->set_world_size(2);
  h->set_rank_source("RANK");
  h->set_host("node1");
  h->set_pid(4242);
  h->set_out_dir("/tmp/ignored");

  wire::Frame batch;
  auto* b = batch.mutable_batch();
  auto add = [&](wire::Api api, uint64_t t) {
    auto* e = b->add_events();
    e->set_api(api);
    e->set_t_ns(t);
    e->set_dur_ns(100);
    return e;
  };
  add(wire::CUDA_STREAM_SYNCHRONIZE, 1000);
  auto* c = add(wire::CUDA_MEMCPY, 2000);
  c->set_copy_kind(wire::COPY_H2D);
  c->set_bytes(4096);
  c->set_flags(wire::FLAG_PAGEABLE | wire::FLAG_BLOCKED_HOST);
  auto* k = add(wire::CUDA_LAUNCH_KERNEL, 3000);
  k->set_name_id(1);
  auto* n = b->add_kernel_names();
  n->set_id(1);
  n->set_name("_Z14vector_add_f32PKfS0_Pfi");
  auto* comm = b->add_communicators();
  comm->set_comm_id(7);
  comm->set_nranks(2);
  comm->set_unique_hash(0xabc);
  auto* ar = add(wire::NCCL_ALL_REDUCE, 4000);
  ar->set_comm_id(7);
  ar->set_bytes(1 << 20);
  ar->set_gpu_ns(5000);
  ar->set_seq(3);
  auto* d = b->add_dropped();
  d->set_reason("ring_full");
  d->set_count(3);
  auto* act = b->add_activities();
  act->set_kind(wire::ACTIVITY_KERNEL);
  act->set_start_ns(3100);
  act->set_end_ns(3900);
  act->set_name_id(1);

  wire::Frame hb;
  auto* beat = hb.mutable_heartbeat();
  beat->set_now_ns(10'000'000'000ull);
  auto* in = beat->add_inside();
  in->set_api(wire::NCCL_ALL_REDUCE);
  in->set_since_ns(1'000'000'000ull);
  in->set_comm_id(7);
  in->set_seq(4);
  auto* cp = beat->add_comms();
  cp->set_comm_id(7);
  cp->set_unique_hash(0xabc);
  cp->set_last_seq(3);
  cp->set_any_returned(true);

  wire::Frame bye;
  bye.mutable_goodbye()->set_events_sent(4);

  const std::string whole = F(hello) + F(batch) + F(hb) + F(batch) + F(bye);
  Write(dir, "whole_stream", whole);
  Write(dir, "hello_only", F(hello));
  Write(dir, "hello_batch", F(hello) + F(batch));
  Write(dir, "hello_heartbeat", F(hello) + F(hb));
  Write(dir, "truncated", whole.substr(0, whole.size() - 5));
  Write(dir, "no_hello", F(batch) + F(bye));
  Write(dir, "two_hellos", F(hello) + F(hello));
  std::printf("seeds written to %s\n", dir.c_str());
  return 0;
}
