/* delayline: a two-port Ethernet delay line with random loss, run by scripts/cluster.sh between a
 * host's switch-side veth end and the bridge when that host has a delay or a loss rate. It stands
 * in for `tc qdisc ... netem`, which kernels built without CONFIG_NET_SCH_NETEM (Firecracker VMs
 * among them) do not have.
 *
 *   delayline IF_A IF_B DELAY_US LOSS_PPM [SEED]
 *
 * Every frame that arrives on one interface leaves on the other DELAY_US microseconds later, in
 * order, unless it is dropped (each wire packet independently with probability LOSS_PPM / 1e6).
 * Frames are read and written with PACKET_VNET_HDR, so TCP segmentation offload (GSO) super-frames
 * cross intact; when loss is on, TCP/IPv4 super-frames are cut into wire-size segments (checksums
 * computed here) so that loss hits single packets as on a wire, not 64 KiB bursts. Writes go
 * through the kernel's queueing discipline of the outgoing interface (the host's rate limit).
 * It runs until killed (SIGTERM/SIGINT); SIGUSR1 (and the end) print its packet counts on stderr. At most QUEUE_LIMIT bytes wait per direction; more are
 * dropped, as a switch buffer would.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

enum { frame_max = 256 * 1024, queue_limit = 64 * 1024 * 1024 };

struct packet {
  struct packet* next;
  uint64_t due_ns;
  size_t len;  // bytes after the vnet header
  struct virtio_net_hdr vnet;
  unsigned char data[];
};

struct direction {
  int in, out;
  struct packet *head, *tail;
  size_t queued;
  unsigned long long received, dropped, sent;
};

static volatile sig_atomic_t stop, report;
static uint64_t delay_ns;
static uint32_t loss_ppm;
static uint64_t rng_state;

static void on_signal(int sig) {
  if (sig == SIGUSR1) report = 1;
  else stop = 1;
}

static void print_counts(const char* a, const char* b, const struct direction* d) {
  fprintf(stderr, "delayline %s<->%s: %s->%s received %llu sent %llu dropped %llu; %s->%s received %llu sent %llu dropped %llu\n",
          a, b, a, b, d[0].received, d[0].sent, d[0].dropped, b, a, d[1].received, d[1].sent, d[1].dropped);
  fflush(stderr);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint32_t next_random(void) {  // xorshift64*
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

static int lost(void) { return loss_ppm > 0 && next_random() % 1000000u < loss_ppm; }

static int open_port(const char* name) {
  int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd < 0) return -1;
  int one = 1;
  if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) < 0) return -1;
  setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
  int buf = 16 * 1024 * 1024;  // the FORCE forms pass net.core.[rw]mem_max (we are root)
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) < 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) < 0) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  struct sockaddr_ll addr = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                             .sll_ifindex = (int)if_nametoindex(name)};
  if (addr.sll_ifindex == 0 || bind(fd, (struct sockaddr*)&addr, sizeof addr) < 0) return -1;
  return fd;
}

static uint32_t sum16(const unsigned char* p, size_t n, uint32_t sum) {
  for (; n > 1; p += 2, n -= 2) sum += (uint32_t)(p[0] << 8 | p[1]);
  if (n) sum += (uint32_t)(p[0] << 8);
  return sum;
}

static uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

static void enqueue(struct direction* d, const struct virtio_net_hdr* vnet, const unsigned char* data, size_t len,
                    uint64_t due) {
  if (d->queued + len > queue_limit) {
    d->dropped++;
    return;
  }
  struct packet* p = malloc(sizeof *p + len);
  if (!p) {
    d->dropped++;
    return;
  }
  p->next = NULL;
  p->due_ns = due;
  p->len = len;
  p->vnet = *vnet;
  memcpy(p->data, data, len);
  if (d->tail) d->tail->next = p;
  else d->head = p;
  d->tail = p;
  d->queued += len;
}

/* Cuts a TCP/IPv4 GSO frame into wire-size segments with full checksums; drops each with the loss
 * probability; queues the rest. Returns 0 when the frame is not TCP/IPv4 (the caller queues it). */
static int segment(struct direction* d, const struct virtio_net_hdr* vnet, const unsigned char* f, size_t len,
                   uint64_t due) {
  if (vnet->gso_type != VIRTIO_NET_HDR_GSO_TCPV4 || len < 14 + 20) return 0;
  if (f[12] != 0x08 || f[13] != 0x00) return 0;  // not IPv4 (no VLAN tags here)
  const size_t iphl = (size_t)(f[14] & 0x0f) * 4;
  if (iphl < 20 || len < 14 + iphl + 20 || f[14 + 9] != 6) return 0;
  const size_t tcphl = (size_t)(f[14 + iphl + 12] >> 4) * 4;
  const size_t hdr = 14 + iphl + tcphl;
  if (tcphl < 20 || len < hdr || vnet->gso_size == 0) return 0;
  const size_t mss = vnet->gso_size, payload = len - hdr;
  const uint16_t id0 = (uint16_t)(f[14 + 4] << 8 | f[14 + 5]);
  const uint32_t seq0 = (uint32_t)f[14 + iphl + 4] << 24 | (uint32_t)f[14 + iphl + 5] << 16 |
                        (uint32_t)f[14 + iphl + 6] << 8 | f[14 + iphl + 7];
  const unsigned char flags0 = f[14 + iphl + 13];
  static unsigned char seg[14 + 60 + 60 + 65536];
  const struct virtio_net_hdr plain = {0};
  size_t off = 0;
  for (unsigned i = 0; off < payload || (payload == 0 && i == 0); ++i) {
    const size_t n = payload - off < mss ? payload - off : mss;
    const int last = off + n >= payload;
    d->received += i > 0;
    if (lost()) {
      d->dropped++;
      off += n;
      if (payload == 0) break;
      continue;
    }
    memcpy(seg, f, hdr);
    memcpy(seg + hdr, f + hdr + off, n);
    unsigned char* ip = seg + 14;
    unsigned char* tcp = ip + iphl;
    const size_t total = iphl + tcphl + n;
    ip[2] = (unsigned char)(total >> 8);
    ip[3] = (unsigned char)total;
    const uint16_t id = (uint16_t)(id0 + i);
    ip[4] = (unsigned char)(id >> 8);
    ip[5] = (unsigned char)id;
    ip[10] = ip[11] = 0;
    const uint16_t ipsum = fold(sum16(ip, iphl, 0));
    ip[10] = (unsigned char)(ipsum >> 8);
    ip[11] = (unsigned char)ipsum;
    const uint32_t seq = seq0 + (uint32_t)off;
    tcp[4] = (unsigned char)(seq >> 24);
    tcp[5] = (unsigned char)(seq >> 16);
    tcp[6] = (unsigned char)(seq >> 8);
    tcp[7] = (unsigned char)seq;
    unsigned char fl = flags0;
    if (!last) fl &= (unsigned char)~(0x01 | 0x08);  // FIN, PSH only on the last segment
    if (i > 0) fl &= (unsigned char)~0x80;           // CWR only on the first
    tcp[13] = fl;
    tcp[16] = tcp[17] = 0;
    uint32_t s = sum16(ip + 12, 8, 0);  // pseudo header: addresses, protocol, TCP length
    s += 6;
    s += (uint32_t)(tcphl + n);
    s = sum16(tcp, tcphl + n, s);
    const uint16_t tcpsum = fold(s);
    tcp[16] = (unsigned char)(tcpsum >> 8);
    tcp[17] = (unsigned char)tcpsum;
    enqueue(d, &plain, seg, hdr + n, due);
    off += n;
    if (payload == 0) break;
  }
  return 1;
}

static void receive(struct direction* d) {
  static unsigned char buf[sizeof(struct virtio_net_hdr) + frame_max];
  for (int k = 0; k < 64; ++k) {
    ssize_t r = recv(d->in, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC);
    if (r < 0) return;
    if ((size_t)r > sizeof buf || (size_t)r < sizeof(struct virtio_net_hdr)) {
      d->dropped++;
      continue;
    }
    d->received++;
    struct virtio_net_hdr vnet;
    memcpy(&vnet, buf, sizeof vnet);
    const unsigned char* frame = buf + sizeof vnet;
    const size_t len = (size_t)r - sizeof vnet;
    const uint64_t due = now_ns() + delay_ns;
    if (loss_ppm > 0 && segment(d, &vnet, frame, len, due)) continue;
    if (lost()) {
      d->dropped++;
      continue;
    }
    enqueue(d, &vnet, frame, len, due);
  }
}

static void transmit(struct direction* d, uint64_t now) {
  static unsigned char buf[sizeof(struct virtio_net_hdr) + frame_max];
  while (d->head && d->head->due_ns <= now) {
    struct packet* p = d->head;
    memcpy(buf, &p->vnet, sizeof p->vnet);
    memcpy(buf + sizeof p->vnet, p->data, p->len);
    if (send(d->out, buf, sizeof p->vnet + p->len, MSG_DONTWAIT) < 0) d->dropped++;  // a full queue drops, as on a wire
    else d->sent++;
    d->head = p->next;
    if (!d->head) d->tail = NULL;
    d->queued -= p->len;
    free(p);
  }
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: delayline IF_A IF_B DELAY_US LOSS_PPM [SEED]\n");
    return 2;
  }
  delay_ns = strtoull(argv[3], NULL, 10) * 1000u;
  loss_ppm = (uint32_t)strtoul(argv[4], NULL, 10);
  rng_state = argc > 5 ? strtoull(argv[5], NULL, 10) : (uint64_t)now_ns() ^ (uint64_t)getpid() << 32;
  if (rng_state == 0) rng_state = 88172645463325252ull;
  int a = open_port(argv[1]), b = open_port(argv[2]);
  if (a < 0 || b < 0) {
    fprintf(stderr, "delayline: cannot open %s / %s: %s\n", argv[1], argv[2], strerror(errno));
    return 1;
  }
  struct sigaction sa = {.sa_handler = on_signal};  // no SA_RESTART: ppoll returns EINTR
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
  struct direction dirs[2] = {{.in = a, .out = b}, {.in = b, .out = a}};
  struct pollfd fds[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
  while (!stop) {
    if (report) {
      report = 0;
      print_counts(argv[1], argv[2], dirs);
    }
    uint64_t now = now_ns(), next_due = UINT64_MAX;
    for (int i = 0; i < 2; ++i) {
      transmit(&dirs[i], now);
      if (dirs[i].head && dirs[i].head->due_ns < next_due) next_due = dirs[i].head->due_ns;
    }
    struct timespec wait = {1, 0};
    if (next_due != UINT64_MAX) {
      const uint64_t ns = next_due > now ? next_due - now : 0;
      wait.tv_sec = (time_t)(ns / 1000000000u);
      wait.tv_nsec = (long)(ns % 1000000000u);
    }
    if (ppoll(fds, 2, &wait, NULL) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i)
      if (fds[i].revents & POLLIN) receive(&dirs[i]);
  }
  print_counts(argv[1], argv[2], dirs);
  return 0;
}
