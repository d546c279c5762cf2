// Trace playback harness: the Verilated NvdlaCore with its memory side (AXI4 slaves on DBBIF
// and, when the build has it, SRAMIF) and a CSB master, all in C++ (no Python per cycle).
//
// Usage: nvdla_playback BATCH_FILE        (format: tb/playback/format.md, written by
//                                          tb/playback/driver.py)
// Output: one JSON line per trace on stdout (see format.md), errors on stderr; exit status 2
// when the batch file is rejected (corrupted or malformed), 0 otherwise.
//
// The timing model is the cocotb engine's (tb/cocotb_trace.py with tb/harness.py and the
// SparseAxiMemory of tb/harness.py) so that both give the same cycles with back-pressure
// off. Per clock edge k:
//   A  ("pre-edge") every process samples the outputs as they were just before edge k
//      (cocotb's RisingEdge(clk) callbacks run before Verilator evaluates the edge);
//   B  the edge is evaluated with the inputs driven before it;
//   C  processes woken by an output's rising edge (the interrupt pin; arvalid / awvalid /
//      wvalid of an idle memory) and cocotb Timers that expire before edge k+1 run;
//   D  inputs written in A and C take effect for edge k+1.
// Physically: settle eval (clk=0 with the new inputs) -> snapshot of the outputs (A) -> clk=1
// eval (B) -> processes of A read the snapshot and write inputs -> C reads live outputs.
#include <verilated.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "Vnvdla_core.h"
#include "playback_config.h"  // PB_HAS_SRAM, PB_DBB_BYTES, PB_SRAM_BYTES (generated per build)

double sc_time_stamp() { return 0; }

namespace {

using Top = Vnvdla_core;

// ------------------------------------------------------------------------------------------
// helpers
// ------------------------------------------------------------------------------------------
uint32_t crc32_table[256];
void crc32_init() {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc32_table[i] = c;
    }
}
uint32_t crc32_update(uint32_t crc, const uint8_t* p, size_t n) {  // zlib.crc32
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = crc32_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

template <class T> inline uint64_t get_u64(const T& sig) {
    uint64_t v = 0;
    std::memcpy(&v, (const void*)&sig, sizeof(T) < 8 ? sizeof(T) : 8);
    return v;
}
template <class T> inline void get_bytes(const T& sig, uint8_t* p, size_t n) {
    std::memcpy(p, (const void*)&sig, std::min(n, sizeof(T)));
}
template <class T> inline void put_bytes(T& sig, const uint8_t* p, size_t n) {
    std::memcpy((void*)&sig, p, std::min(n, sizeof(T)));
}

struct Rng {  // xorshift64*: back-pressure and latency draws
    uint64_t s;
    explicit Rng(uint64_t seed = 1) : s(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {
        if (!s) s = 1;
    }
    uint64_t next() {
        s ^= s >> 12; s ^= s << 25; s ^= s >> 27;
        return s * 0x2545F4914F6CDD1Dull;
    }
    double uniform() { return (next() >> 11) * (1.0 / 9007199254740992.0); }
    int randint(int lo, int hi) { return lo + (int)(next() % (uint64_t)(hi - lo + 1)); }
};

// ------------------------------------------------------------------------------------------
// sparse memory: 64 KiB pages on first write; untouched memory reads 0
// ------------------------------------------------------------------------------------------
struct SparseMem {
    static constexpr uint64_t PAGE = 1u << 16;
    std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages;
    uint8_t* page(uint64_t a, bool create) {
        auto it = pages.find(a / PAGE);
        if (it != pages.end()) return it->second.get();
        if (!create) return nullptr;
        auto p = std::unique_ptr<uint8_t[]>(new uint8_t[PAGE]());
        uint8_t* raw = p.get();
        pages.emplace(a / PAGE, std::move(p));
        return raw;
    }
    void write(uint64_t a, const uint8_t* src, size_t n) {
        while (n) {
            size_t off = a % PAGE, k = std::min<size_t>(n, PAGE - off);
            std::memcpy(page(a, true) + off, src, k);
            a += k; src += k; n -= k;
        }
    }
    void fill(uint64_t a, size_t n, uint8_t v) {
        while (n) {
            size_t off = a % PAGE, k = std::min<size_t>(n, PAGE - off);
            std::memset(page(a, true) + off, v, k);
            a += k; n -= k;
        }
    }
    void read(uint64_t a, uint8_t* dst, size_t n) {
        while (n) {
            size_t off = a % PAGE, k = std::min<size_t>(n, PAGE - off);
            uint8_t* p = page(a, false);
            if (p) std::memcpy(dst, p + off, k); else std::memset(dst, 0, k);
            a += k; dst += k; n -= k;
        }
    }
    void clear() { pages.clear(); }
};

struct Options {
    uint64_t max_cycles = 2000000;
    uint32_t poll_interval = 16, status_interval = 1024;
    bool backpressure = true, nposted = false;
    double busy = 0.3;
    int lat_lo = 1, lat_hi = 16;
    uint64_t seed = 1;
    uint32_t outstanding = 16, max_burst = 16;
    uint32_t glb_status = 0, glb_mask = 0, intr_mask_reset = 0;
};

// ------------------------------------------------------------------------------------------
// AXI4 slave memory (the cocotb engine's SparseAxiMemory, cycle for cycle with back-pressure
// off): event-driven idle (readies low until the master raises a valid), in-order read data
// and write responses `latency` cycles after the address / the burst's data, random stalls.
// ------------------------------------------------------------------------------------------
#define PB_PORT_STRUCT(NAME, PFX, BYTES)                                                     \
    struct NAME {                                                                            \
        static constexpr int bytes = BYTES;                                                  \
        static uint8_t arvalid(Top* t) { return t->PFX##_ar_arvalid; }                       \
        static uint64_t araddr(Top* t) { return get_u64(t->PFX##_ar_araddr); }               \
        static uint32_t arlen(Top* t) { return t->PFX##_ar_arlen; }                          \
        static uint32_t arid(Top* t) { return t->PFX##_ar_arid; }                            \
        static uint8_t rready(Top* t) { return t->PFX##_r_rready; }                          \
        static uint8_t awvalid(Top* t) { return t->PFX##_aw_awvalid; }                       \
        static uint64_t awaddr(Top* t) { return get_u64(t->PFX##_aw_awaddr); }               \
        static uint32_t awlen(Top* t) { return t->PFX##_aw_awlen; }                          \
        static uint32_t awid(Top* t) { return t->PFX##_aw_awid; }                            \
        static uint8_t wvalid(Top* t) { return t->PFX##_w_wvalid; }                          \
        static void wdata(Top* t, uint8_t* p) { get_bytes(t->PFX##_w_wdata, p, BYTES); }     \
        static uint64_t wstrb(Top* t) { return get_u64(t->PFX##_w_wstrb); }                  \
        static uint8_t wlast(Top* t) { return t->PFX##_w_wlast; }                            \
        static uint8_t bready(Top* t) { return t->PFX##_b_bready; }                          \
        static void set_arready(Top* t, int v) { t->PFX##_ar_arready = v; }                  \
        static void set_awready(Top* t, int v) { t->PFX##_aw_awready = v; }                  \
        static void set_wready(Top* t, int v) { t->PFX##_w_wready = v; }                     \
        static void set_r(Top* t, int valid, const uint8_t* data, int last, uint32_t id) {   \
            t->PFX##_r_rvalid = valid;                                                       \
            if (data) put_bytes(t->PFX##_r_rdata, data, BYTES);                              \
            t->PFX##_r_rlast = last;                                                         \
            t->PFX##_r_rid = id;                                                             \
        }                                                                                    \
        static void set_rvalid(Top* t, int v) { t->PFX##_r_rvalid = v; }                     \
        static void set_b(Top* t, int valid, uint32_t id) {                                  \
            t->PFX##_b_bvalid = valid;                                                       \
            t->PFX##_b_bid = id;                                                             \
        }                                                                                    \
        static void set_bvalid(Top* t, int v) { t->PFX##_b_bvalid = v; }                     \
    };

PB_PORT_STRUCT(DbbPort, nvdla_core2dbb, PB_DBB_BYTES)
#if PB_HAS_SRAM
PB_PORT_STRUCT(SramPort, nvdla_core2sram, PB_SRAM_BYTES)
#endif

// The outputs a memory samples before an edge (phase A).
struct AxiSample {
    uint8_t arvalid, rready, awvalid, wvalid, wlast, bready;
    uint32_t arlen, arid, awlen, awid;
    uint64_t araddr, awaddr, wstrb;
    uint8_t wdata[128];
};

template <class P> struct AxiSlave {
    static constexpr int NB = P::bytes;
    const char* name;  // "DBBIF" / "SRAMIF"
    SparseMem mem;
    const Options* o;
    Rng* rng;
    std::vector<std::string>* errors;
    uint64_t reads = 0, writes = 0;  // bursts served (this trace)

    struct RBurst { uint64_t due; uint32_t id; uint64_t base; uint32_t beats; std::vector<uint8_t> data; bool fetched; };
    struct WResp { uint64_t due; uint32_t id; };
    struct Aw { uint32_t id; uint64_t base; uint32_t beats; };
    struct WBeat { uint8_t data[128]; uint64_t strb; };
    // read side
    std::deque<RBurst> bursts;
    int ar_ready = 0, r_valid = 0; uint32_t beat = 0; bool r_wait = false;
    // write side
    std::deque<Aw> aws;
    std::deque<std::vector<WBeat>> wbursts;
    std::vector<WBeat> wbeats;
    std::deque<WResp> resps;
    int aw_ready = 0, w_ready = 0, b_valid = 0; bool w_wait = false;

    AxiSlave(const char* n, const Options* opt, Rng* r, std::vector<std::string>* e)
        : name(n), o(opt), rng(r), errors(e) {}

    bool go() { return !o->backpressure || rng->uniform() >= o->busy; }
    uint64_t delay() {
        if (!o->backpressure || o->lat_hi <= o->lat_lo) return o->lat_lo;
        return rng->randint(o->lat_lo, o->lat_hi);
    }

    void sample(Top* t, AxiSample& s) {
        s.arvalid = P::arvalid(t); s.rready = P::rready(t);
        s.awvalid = P::awvalid(t); s.wvalid = P::wvalid(t); s.bready = P::bready(t);
        if (s.arvalid) { s.araddr = P::araddr(t); s.arlen = P::arlen(t); s.arid = P::arid(t); }
        if (s.awvalid) { s.awaddr = P::awaddr(t); s.awlen = P::awlen(t); s.awid = P::awid(t); }
        if (s.wvalid) { P::wdata(t, s.wdata); s.wstrb = P::wstrb(t); s.wlast = P::wlast(t); }
    }

    // Drop everything in flight and drive the port idle (core reset); memory contents stay.
    void stop(Top* t) {
        bursts.clear(); aws.clear(); wbursts.clear(); wbeats.clear(); resps.clear();
        ar_ready = r_valid = aw_ready = w_ready = b_valid = 0; beat = 0;
        r_wait = w_wait = true;  // the loops start idle, waiting for a valid
        uint8_t zero[128] = {0};
        P::set_arready(t, 0); P::set_awready(t, 0); P::set_wready(t, 0);
        P::set_r(t, 0, zero, 0, 0); P::set_b(t, 0, 0);
    }

    void burst_check(const char* kind, uint64_t addr, uint32_t beats) {
        uint64_t start = addr - addr % NB;
        char buf[200];
        if ((start & 0xFFF) + (uint64_t)beats * NB > 0x1000) {
            std::snprintf(buf, sizeof buf, "%s %s burst at %#" PRIx64 " of %u beats crosses a 4 KiB boundary",
                          name, kind, addr, beats);
            errors->push_back(buf);
        }
        if (beats > o->max_burst) {
            std::snprintf(buf, sizeof buf, "%s %s burst at %#" PRIx64 " of %u beats exceeds the maximum burst of %u",
                          name, kind, addr, beats, o->max_burst);
            errors->push_back(buf);
        }
    }

    // ---- read loop -------------------------------------------------------------------
    void r_drive(Top* t, uint64_t now) {  // "drive for the coming edge"
        int want = (int)(bursts.size() < o->outstanding && go());
        if (want != ar_ready) { ar_ready = want; P::set_arready(t, want); }
        if (!r_valid && !bursts.empty() && bursts.front().due <= now && go()) {
            RBurst& b = bursts.front();
            if (!b.fetched) {
                b.data.resize((size_t)b.beats * NB);
                mem.read(b.base, b.data.data(), b.data.size());
                b.fetched = true;
            }
            P::set_r(t, 1, b.data.data() + (size_t)beat * NB, beat == b.beats - 1, b.id);
            r_valid = 1;
        }
    }
    void r_phase_a(Top* t, const AxiSample& s, uint64_t now) {
        if (r_wait) return;
        if (r_valid && s.rready) {
            beat++;
            r_valid = 0; P::set_rvalid(t, 0);
            if (beat == bursts.front().beats) { bursts.pop_front(); beat = 0; reads++; }
        }
        if (ar_ready && s.arvalid) {
            uint32_t beats = s.arlen + 1;
            burst_check("read", s.araddr, beats);
            bursts.push_back(RBurst{now + delay(), s.arid, s.araddr - s.araddr % NB, beats, {}, false});
        }
        if (bursts.empty() && !r_valid) {
            if (ar_ready) { ar_ready = 0; P::set_arready(t, 0); }
            if (!s.arvalid) { r_wait = true; return; }
        }
        r_drive(t, now);
    }
    void r_phase_c(Top* t, uint64_t now) {  // an idle read loop wakes on arvalid's rise
        if (r_wait && P::arvalid(t)) { r_wait = false; r_drive(t, now); }
    }

    // ---- write loop ------------------------------------------------------------------
    void w_drive(Top* t, uint64_t now) {
        int want = (int)(aws.size() < o->outstanding && go());
        if (want != aw_ready) { aw_ready = want; P::set_awready(t, want); }
        want = (int)go();
        if (want != w_ready) { w_ready = want; P::set_wready(t, want); }
        if (!b_valid && !resps.empty() && resps.front().due <= now && go()) {
            P::set_b(t, 1, resps.front().id);
            b_valid = 1;
        }
    }
    void store(uint64_t addr, const WBeat& w) {
        const uint64_t full = NB >= 64 ? ~0ull : ((1ull << NB) - 1);
        if (w.strb == full) { mem.write(addr, w.data, NB); return; }
        for (int i = 0; i < NB;) {
            if ((w.strb >> i) & 1) {
                int j = i;
                while (j < NB && ((w.strb >> j) & 1)) j++;
                mem.write(addr + i, w.data + i, j - i);
                i = j;
            } else {
                i++;
            }
        }
    }
    void w_phase_a(Top* t, const AxiSample& s, uint64_t now) {
        if (w_wait) return;
        if (b_valid && s.bready) { resps.pop_front(); b_valid = 0; P::set_bvalid(t, 0); }
        if (aw_ready && s.awvalid) {
            uint32_t beats = s.awlen + 1;
            burst_check("write", s.awaddr, beats);
            aws.push_back(Aw{s.awid, s.awaddr - s.awaddr % NB, beats});
        }
        if (w_ready && s.wvalid) {
            WBeat b; std::memcpy(b.data, s.wdata, NB); b.strb = s.wstrb;
            wbeats.push_back(b);
            if (s.wlast) { wbursts.push_back(std::move(wbeats)); wbeats.clear(); }
        }
        while (!aws.empty() && !wbursts.empty()) {
            Aw a = aws.front(); aws.pop_front();
            std::vector<WBeat> data = std::move(wbursts.front()); wbursts.pop_front();
            if (data.size() != a.beats) {
                char buf[200];
                std::snprintf(buf, sizeof buf, "%s write burst at %#" PRIx64 ": awlen says %u beats, wlast after %zu",
                              name, a.base, a.beats, data.size());
                errors->push_back(buf);
            }
            for (size_t i = 0; i < data.size(); i++) store(a.base + i * NB, data[i]);
            writes++;
            resps.push_back(WResp{now + delay(), a.id});
        }
        if (aws.empty() && wbeats.empty() && wbursts.empty() && resps.empty() && !b_valid) {
            if (aw_ready) { aw_ready = 0; P::set_awready(t, 0); }
            if (w_ready) { w_ready = 0; P::set_wready(t, 0); }
            if (!s.awvalid && !s.wvalid) { w_wait = true; return; }
        }
        w_drive(t, now);
    }
    void w_phase_c(Top* t, uint64_t now) {
        if (w_wait && (P::awvalid(t) || P::wvalid(t))) { w_wait = false; w_drive(t, now); }
    }
};

// ------------------------------------------------------------------------------------------
// batch file (tb/playback/format.md)
// ------------------------------------------------------------------------------------------
enum Op : uint8_t { OP_NOP = 0, OP_WRITE = 1, OP_POLL = 2, OP_INTR = 3, OP_MEM_INIT = 4,
                    OP_MEM_LOAD = 5, OP_CHECK_CRC = 6, OP_READ = 7, OP_WAIT = 8, OP_DUMP = 9 };
struct Cmd {
    uint8_t op, mem; uint16_t flags; uint32_t a; uint64_t b, c;
};
static_assert(sizeof(Cmd) == 24, "command record is 24 bytes");
struct TraceIn {
    std::vector<Cmd> cmds;
    std::vector<uint8_t> image;
};

struct Reject : std::runtime_error { using std::runtime_error::runtime_error; };

struct Reader {
    const uint8_t* p; size_t n, pos = 0;
    void need(size_t k, const char* what) {
        if (n - pos < k) throw Reject(std::string("truncated batch file: ") + what + " runs past its end");
    }
    uint32_t u32(const char* what) { need(4, what); uint32_t v; std::memcpy(&v, p + pos, 4); pos += 4; return v; }
    uint64_t u64(const char* what) { need(8, what); uint64_t v; std::memcpy(&v, p + pos, 8); pos += 8; return v; }
};

std::vector<TraceIn> read_batch(const std::vector<uint8_t>& buf, Options& o) {
    Reader r{buf.data(), buf.size()};
    r.need(8, "the magic");
    if (std::memcmp(buf.data(), "NVDLAPB1", 8)) throw Reject("not a playback batch file (bad magic; expected NVDLAPB1)");
    r.pos = 8;
    uint32_t hdr_len = r.u32("the header length");
    if (hdr_len != 88) throw Reject("header length " + std::to_string(hdr_len) + ", expected 88");
    r.need(hdr_len + 4, "the header");
    uint32_t hcrc = crc32_update(0, buf.data() + r.pos, hdr_len);
    o.max_cycles = r.u64("header");
    o.poll_interval = r.u32("header"); o.status_interval = r.u32("header");
    uint32_t flags = r.u32("header");
    o.backpressure = flags & 1; o.nposted = flags & 2;
    o.busy = r.u32("header") / 1e6;
    o.lat_lo = (int)r.u32("header"); o.lat_hi = (int)r.u32("header");
    o.seed = r.u64("header");
    o.outstanding = r.u32("header"); o.max_burst = r.u32("header");
    o.glb_status = r.u32("header"); o.glb_mask = r.u32("header"); o.intr_mask_reset = r.u32("header");
    uint32_t has_sram = r.u32("header"), dbb_bytes = r.u32("header"), sram_bytes = r.u32("header");
    uint32_t ntraces = r.u32("header");
    r.u32("header");  // reserved
    r.u64("header");  // reserved
    if (r.u32("header checksum") != hcrc) throw Reject("header checksum mismatch: the batch file is corrupted");
    if (has_sram != PB_HAS_SRAM || dbb_bytes != PB_DBB_BYTES || (PB_HAS_SRAM && sram_bytes != PB_SRAM_BYTES))
        throw Reject("the batch was written for another build (SRAMIF / bus widths differ)");
    if (o.poll_interval < 1 || o.status_interval < 1 || o.lat_lo < 0 || o.lat_hi < o.lat_lo ||
        o.outstanding < 1 || o.busy < 0 || o.busy >= 1)
        throw Reject("invalid options in the header");
    std::vector<TraceIn> out(ntraces);
    for (uint32_t i = 0; i < ntraces; i++) {
        std::string t = "trace " + std::to_string(i);
        if (r.u32((t + " magic").c_str()) != 0x45435254u) throw Reject(t + ": bad record magic (expected TRCE)");
        uint32_t ncmd = r.u32((t + " header").c_str());
        uint64_t img = r.u64((t + " header").c_str());
        uint32_t ccrc = r.u32((t + " header").c_str()), icrc = r.u32((t + " header").c_str());
        if ((uint64_t)ncmd * sizeof(Cmd) > r.n - r.pos) throw Reject(t + ": command list runs past the end of the file");
        const uint8_t* cp = r.p + r.pos;
        if (crc32_update(0, cp, (size_t)ncmd * sizeof(Cmd)) != ccrc)
            throw Reject(t + ": command list checksum mismatch: the command list is corrupted");
        out[i].cmds.resize(ncmd);
        std::memcpy(out[i].cmds.data(), cp, (size_t)ncmd * sizeof(Cmd));
        r.pos += (size_t)ncmd * sizeof(Cmd);
        if (img > r.n - r.pos) throw Reject(t + ": memory image runs past the end of the file");
        if (crc32_update(0, r.p + r.pos, img) != icrc)
            throw Reject(t + ": memory image checksum mismatch: the memory image is corrupted");
        out[i].image.assign(r.p + r.pos, r.p + r.pos + img);
        r.pos += img;
        // structure
        for (uint32_t k = 0; k < ncmd; k++) {
            const Cmd& c = out[i].cmds[k];
            std::string w = t + " command " + std::to_string(k);
            if (c.op > OP_DUMP) throw Reject(w + ": unknown op " + std::to_string(c.op));
            if ((c.op == OP_MEM_INIT || c.op == OP_MEM_LOAD || c.op == OP_CHECK_CRC ||
                 c.op == OP_DUMP) && c.mem > 1)
                throw Reject(w + ": unknown memory " + std::to_string(c.mem));
            if (c.op == OP_MEM_LOAD) {
                uint64_t pos = c.c;
                for (uint32_t run = 0; run < c.a; run++) {
                    if (pos + 12 > img) throw Reject(w + ": mem_load run " + std::to_string(run) + " lies outside the memory image");
                    uint32_t len; std::memcpy(&len, out[i].image.data() + pos + 8, 4);
                    pos += 12;
                    if (len > img - pos) throw Reject(w + ": mem_load run " + std::to_string(run) + " lies outside the memory image");
                    pos += len;
                }
            }
            if ((c.op == OP_MEM_INIT || c.op == OP_CHECK_CRC || c.op == OP_DUMP) && c.c > (1ull << 32))
                throw Reject(w + ": size " + std::to_string(c.c) + " too large");
            if (c.op == OP_DUMP && (uint64_t)c.a + c.c > img)
                throw Reject(w + ": dump_mem expected bytes lie outside the memory image");
            if (c.op == OP_READ && (c.c >> 32) == 0)
                throw Reject(w + ": read_reg with 0 tries");
        }
    }
    if (r.pos != r.n) throw Reject("trailing bytes after the last trace");
    return out;
}

// ------------------------------------------------------------------------------------------
// the bench: clock, reset, CSB master, interrupt monitor, memories, trace sequencer
// ------------------------------------------------------------------------------------------
struct Stop { std::string json; };  // ends a trace (timeout, no such memory)

struct Bench {
    Top* top;
    Options o;
    Rng rng;
    std::vector<std::string> errors;
    AxiSlave<DbbPort> dbb;
#if PB_HAS_SRAM
    AxiSlave<SramPort> sram;
#endif
    uint64_t cycle = 0;
    // pre-edge snapshot of this edge (phase A)
    uint8_t s_ready = 0, s_rvalid = 0, s_wrc = 0, s_pin = 0;
    uint32_t s_rdata = 0;
    AxiSample s_dbb{}, s_sram{};
    bool pin_rose = false;  // the interrupt pin rose at this edge
    std::vector<uint64_t> interrupt_edges;
    // CSB driver
    std::deque<uint32_t> reads;
    uint64_t completions = 0;
    std::vector<uint64_t> op_cycles;

    Bench(Top* t, const Options& opt)
        : top(t), o(opt), rng(opt.seed), dbb("DBBIF", &o, &rng, &errors)
#if PB_HAS_SRAM
          , sram("SRAMIF", &o, &rng, &errors)
#endif
    {}

    // One clock edge: from phase A/C of edge k to phase A of edge k+1.
    void tick() {
        top->clk = 0;
        top->eval();
        s_ready = top->csb2nvdla_ready; s_rvalid = top->nvdla2csb_valid;
        s_wrc = top->nvdla2csb_wr_complete; s_pin = top->nvdla2core_interrupt;
        if (s_rvalid) s_rdata = top->nvdla2csb_data;
        dbb.sample(top, s_dbb);
#if PB_HAS_SRAM
        sram.sample(top, s_sram);
#endif
        top->clk = 1;
        top->eval();
        cycle++;
        pin_rose = !s_pin && top->nvdla2core_interrupt;
        if (pin_rose) interrupt_edges.push_back(cycle);
        dbb.r_phase_a(top, s_dbb, cycle); dbb.w_phase_a(top, s_dbb, cycle);
        dbb.r_phase_c(top, cycle); dbb.w_phase_c(top, cycle);
#if PB_HAS_SRAM
        sram.r_phase_a(top, s_sram, cycle); sram.w_phase_a(top, s_sram, cycle);
        sram.r_phase_c(top, cycle); sram.w_phase_c(top, cycle);
#endif
    }

    void reset() {
        top->csb2nvdla_valid = 0;
        top->rst = 1;
        dbb.stop(top);
#if PB_HAS_SRAM
        sram.stop(top);
#endif
        for (int i = 0; i < 3; i++) tick();
        top->rst = 0;
        tick();
        interrupt_edges.clear();
    }

    void csb_sample() {
        if (s_rvalid) reads.push_back(s_rdata);
        if (s_wrc) completions++;
    }

    struct Op { int kind; uint32_t addr; uint32_t data; };  // kind: 0 read, 1 write, 2 nposted write
    // CsbDriver.burst: one request per cycle while ready; returns read values
    std::vector<uint32_t> burst(const Op* ops, size_t n) {
        size_t n_reads = 0, n_np = 0;
        for (size_t i = 0; i < n; i++) { n_reads += ops[i].kind == 0; n_np += ops[i].kind == 2; }
        size_t reads0 = reads.size();
        uint64_t comp0 = completions;
        op_cycles.clear();
        for (size_t i = 0; i < n; i++) {
            top->csb2nvdla_valid = 1;
            top->csb2nvdla_addr = ops[i].addr;
            top->csb2nvdla_wdat = ops[i].kind ? ops[i].data : 0;
            top->csb2nvdla_write = ops[i].kind != 0;
            top->csb2nvdla_nposted = ops[i].kind == 2;
            while (true) {
                tick();
                csb_sample();
                if (s_ready) break;
            }
            op_cycles.push_back(cycle);
        }
        top->csb2nvdla_valid = 0;
        for (int k = 0; k < 8; k++) {
            if (reads.size() - reads0 >= n_reads && completions - comp0 >= n_np) break;
            tick();
            csb_sample();
        }
        if (reads.size() - reads0 != n_reads || completions - comp0 != n_np)
            throw std::runtime_error("CSB: expected " + std::to_string(n_reads) + " read responses and " +
                                     std::to_string(n_np) + " write completions, got " +
                                     std::to_string(reads.size() - reads0) + " and " +
                                     std::to_string(completions - comp0));
        std::vector<uint32_t> got(reads.begin() + reads0, reads.end());
        reads.clear();
        return got;
    }
    uint32_t read(uint32_t addr) {
        Op op{0, addr, 0};
        return burst(&op, 1)[0];
    }
    // cocotb Timer of n cycles minus half a cycle from an edge: resume just before edge k+n
    void wait_cycles(uint64_t n) { for (uint64_t i = 1; i < n; i++) tick(); }
    // First(RisingEdge(pin), Timer(n cycles - half)): from phase A of edge k, the pin's rise
    // at edges k .. k+n-1 or the timer just before edge k+n
    void wait_pin_or(uint64_t n) {
        if (pin_rose) return;
        for (uint64_t i = 1; i < n; i++) {
            tick();
            if (pin_rose) return;
        }
    }
};

// One trace's commands (tb/cocotb_trace.py _TraceExec)
struct Exec {
    Bench& b;
    const TraceIn& t;
    int wkind;
    uint32_t intr_mask;
    bool have_enable = false;
    uint64_t enable_cycle = 0;
    std::vector<std::pair<uint64_t, uint64_t>> layers;
    bool bit_valid[32] = {false};
    uint64_t bit_cycle[32] = {0};
    uint64_t last_status_read;
    std::vector<uint32_t> crcs;
    std::string reads, dumps;    // JSON items: failed read_reg [cmd, value]; dump_mem results

    Exec(Bench& bench, const TraceIn& tr)
        : b(bench), t(tr), wkind(bench.o.nposted ? 2 : 1), intr_mask(bench.o.intr_mask_reset),
          last_status_read(bench.cycle) {}

    SparseMem* mem(const Cmd& c, size_t idx) {
        if (c.mem == 0) return &b.dbb.mem;
#if PB_HAS_SRAM
        return &b.sram.mem;
#else
        throw Stop{"{\"kind\":\"nomem\",\"cmd\":" + std::to_string(idx) + "}"};
#endif
    }

    uint32_t read_status() {
        uint32_t status = b.read(b.o.glb_status);
        uint64_t seen = b.op_cycles[0], since = last_status_read;
        last_status_read = seen;
        uint32_t set = 0;
        for (int i = 0; i < 32; i++) if (bit_valid[i]) set |= 1u << i;
        uint32_t nw = status & ~set;
        if (nw) {
            bool have_edge = false; uint64_t edge = 0;
            for (uint64_t e : b.interrupt_edges)
                if (since < e && e <= seen) { have_edge = true; edge = e; break; }
            for (int i = 0; i < 32; i++)
                if (nw & (1u << i)) {
                    bit_valid[i] = true;
                    bit_cycle[i] = (!have_edge || (intr_mask & (1u << i))) ? seen : edge;
                }
        }
        return status;
    }

    void layer_end(uint64_t c) {
        if (have_enable) {
            layers.emplace_back(enable_cycle, std::max(c, enable_cycle));
            have_enable = false;
        } else if (!layers.empty()) {
            layers.back().second = std::max(layers.back().second, c);
        }
    }

    void poll(const Cmd& c, size_t idx) {
        uint64_t start = b.cycle;
        while (true) {
            uint32_t v = b.read(c.a);
            if (v == (uint32_t)c.b) return;
            uint64_t waited = b.cycle - start;
            if (waited >= b.o.max_cycles)
                throw Stop{"{\"kind\":\"poll\",\"cmd\":" + std::to_string(idx) + ",\"waited\":" +
                           std::to_string(waited) + ",\"value\":" + std::to_string(v) + "}"};
            b.wait_cycles(std::min<uint64_t>(b.o.poll_interval, b.o.max_cycles - waited));
        }
    }

    // intr_notify: until a bit of the mask is set in S_INTR_STATUS, then clear it. A single
    // shot (flags bit 0) waits for any unmasked source of the mask (the pin) and clears every
    // pending unmasked one.
    void intr(const Cmd& c, size_t idx) {
        bool single = c.flags & 1;
        uint64_t start = b.cycle;
        while (true) {
            uint32_t mask = single ? (uint32_t)c.b & ~intr_mask : (uint32_t)c.b;
            uint32_t status = read_status();
            if (status & mask) {
                uint32_t clear = single ? status & mask : mask;
                bool any = false; uint64_t came = 0;
                for (int i = 0; i < 32; i++)
                    if (bit_valid[i] && (clear & (1u << i))) {
                        came = any ? std::min(came, bit_cycle[i]) : bit_cycle[i];
                        any = true;
                        bit_valid[i] = false;
                    }
                layer_end(any ? came : last_status_read);
                Bench::Op op{wkind, b.o.glb_status, clear};
                b.burst(&op, 1);
                return;
            }
            uint64_t waited = b.cycle - start;
            if (waited >= b.o.max_cycles) {
                std::string j = "{\"kind\":\"intr\",\"cmd\":" + std::to_string(idx) + ",\"waited\":" +
                                std::to_string(waited) + ",\"status\":" + std::to_string(status) +
                                ",\"pin\":" + std::to_string((int)b.s_pin) + ",\"traffic\":[[\"DBBIF\"," +
                                std::to_string(b.dbb.reads) + "," + std::to_string(b.dbb.writes) + "]";
#if PB_HAS_SRAM
                j += ",[\"SRAMIF\"," + std::to_string(b.sram.reads) + "," + std::to_string(b.sram.writes) + "]";
#endif
                throw Stop{j + "]}"};
            }
            uint64_t left = b.o.max_cycles - waited;
            if (b.s_pin) b.wait_cycles(std::min<uint64_t>(b.o.poll_interval, left));
            else b.wait_pin_or(std::min<uint64_t>(b.o.status_interval, left));
        }
    }

    // read_reg: (value & mask) == (expected & mask), up to `tries` reads poll_interval apart
    void read_masked(const Cmd& c, size_t idx) {
        uint32_t mask = (uint32_t)c.b, want = (uint32_t)c.c;
        uint64_t tries = c.c >> 32;
        while (true) {
            uint32_t v = c.a == b.o.glb_status ? read_status() : b.read(c.a);
            if (!((v ^ want) & mask)) return;
            if (--tries == 0) {
                reads += (reads.empty() ? "[" : ",[") + std::to_string(idx) + "," +
                         std::to_string(v) + "]";
                return;
            }
            b.wait_cycles(b.o.poll_interval);
        }
    }

    // wait: until the interrupt pin is high (nothing cleared)
    void wait_pin(size_t idx) {
        uint64_t start = b.cycle;
        while (!b.s_pin && !b.pin_rose) {     // high before this edge, or rose at it
            uint64_t waited = b.cycle - start;
            if (waited >= b.o.max_cycles)
                throw Stop{"{\"kind\":\"wait\",\"cmd\":" + std::to_string(idx) + ",\"waited\":" +
                           std::to_string(waited) + "}"};
            b.wait_pin_or(std::min<uint64_t>(b.o.status_interval, b.o.max_cycles - waited));
        }
        layer_end(b.cycle);
    }

    // dump_mem: the region against the expected bytes: [differing bytes, first offset, expected, got]
    void dump(const Cmd& c, size_t idx) {
        SparseMem* m = mem(c, idx);
        std::vector<uint8_t> buf(c.c);
        m->read(c.b, buf.data(), buf.size());
        const uint8_t* want = t.image.data() + c.a;
        uint64_t n = 0, first = 0;
        for (uint64_t k = 0; k < c.c; k++)
            if (buf[k] != want[k]) { if (!n) first = k; n++; }
        dumps += (dumps.empty() ? "[" : ",[") + std::to_string(n) + "," + std::to_string(first) +
                 "," + std::to_string(n ? want[first] : 0) + "," + std::to_string(n ? buf[first] : 0) +
                 "," + std::to_string(crc32_update(0, buf.data(), buf.size())) + "]";
    }

    void note_writes(const std::vector<Bench::Op>& ops, const std::vector<const Cmd*>& cmds) {
        for (size_t i = 0; i < ops.size(); i++) {
            const Cmd& c = *cmds[i];
            if (c.flags & 1) { have_enable = true; enable_cycle = b.op_cycles[i]; }
            else if (c.a == b.o.glb_mask) intr_mask = (uint32_t)c.b;
            else if (c.a == b.o.glb_status)
                for (int k = 0; k < 32; k++) if ((uint32_t)c.b & (1u << k)) bit_valid[k] = false;
        }
    }

    void run() {
        const auto& cmds = t.cmds;
        size_t i = 0;
        std::vector<Bench::Op> ops;
        std::vector<const Cmd*> wcmds;
        while (i < cmds.size()) {
            const Cmd& c = cmds[i];
            switch (c.op) {
            case OP_WRITE: {
                ops.clear(); wcmds.clear();
                size_t j = i;
                while (j < cmds.size() && cmds[j].op == OP_WRITE) {
                    ops.push_back(Bench::Op{wkind, cmds[j].a, (uint32_t)cmds[j].b});
                    wcmds.push_back(&cmds[j]);
                    j++;
                }
                b.burst(ops.data(), ops.size());
                note_writes(ops, wcmds);
                i = j;
                continue;
            }
            case OP_MEM_LOAD: {
                SparseMem* m = mem(c, i);
                uint64_t pos = c.c;
                for (uint32_t run = 0; run < c.a; run++) {
                    uint64_t off; uint32_t len;
                    std::memcpy(&off, t.image.data() + pos, 8);
                    std::memcpy(&len, t.image.data() + pos + 8, 4);
                    m->write(c.b + off, t.image.data() + pos + 12, len);
                    pos += 12 + len;
                }
                break;
            }
            case OP_MEM_INIT: mem(c, i)->fill(c.b, c.c, (uint8_t)(c.flags & 0xFF)); break;
            case OP_POLL: poll(c, i); break;
            case OP_INTR: intr(c, i); break;
            case OP_READ: read_masked(c, i); break;
            case OP_WAIT: wait_pin(i); break;
            case OP_DUMP: dump(c, i); break;
            case OP_CHECK_CRC: {
                SparseMem* m = mem(c, i);
                std::vector<uint8_t> buf(c.c);
                m->read(c.b, buf.data(), buf.size());
                crcs.push_back(crc32_update(0, buf.data(), buf.size()));
                break;
            }
            default: break;
            }
            i++;
        }
    }
};

std::string json_str(const std::string& s) {
    std::string o = "\"";
    for (char ch : s) {
        if (ch == '"' || ch == '\\') { o += '\\'; o += ch; }
        else if ((unsigned char)ch < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", ch); o += b; }
        else o += ch;
    }
    return o + "\"";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s BATCH_FILE\n", argv[0]);
        return 2;
    }
    crc32_init();
    std::vector<uint8_t> buf;
    {
        FILE* f = std::fopen(argv[1], "rb");
        if (!f) { std::fprintf(stderr, "playback: cannot open %s\n", argv[1]); return 2; }
        std::fseek(f, 0, SEEK_END);
        long n = std::ftell(f);
        std::fseek(f, 0, SEEK_SET);
        buf.resize(n > 0 ? n : 0);
        if (n > 0 && std::fread(buf.data(), 1, n, f) != (size_t)n) { std::fprintf(stderr, "playback: cannot read %s\n", argv[1]); return 2; }
        std::fclose(f);
    }
    Options o;
    std::vector<TraceIn> traces;
    try {
        traces = read_batch(buf, o);
    } catch (const Reject& e) {
        std::fprintf(stderr, "playback: batch file %s rejected: %s\n", argv[1], e.what());
        return 2;
    }
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto top = std::make_unique<Top>(ctx.get(), "");
    top->clk = 0;
    top->rst = 1;
    top->csb2nvdla_valid = 0;
    top->eval();
    Bench b(top.get(), o);
    for (size_t n = 0; n < traces.size(); n++) {
        auto t0 = std::chrono::steady_clock::now();
        b.errors.clear();
        b.reset();
        b.dbb.mem.clear(); b.dbb.reads = b.dbb.writes = 0;
#if PB_HAS_SRAM
        b.sram.mem.clear(); b.sram.reads = b.sram.writes = 0;
#endif
        Exec ex(b, traces[n]);
        uint64_t c0 = b.cycle;
        std::string stop = "null";
        try {
            ex.run();
        } catch (const Stop& s) {
            stop = s.json;
        } catch (const std::exception& e) {
            stop = "{\"kind\":\"internal\",\"message\":" + json_str(e.what()) + "}";
        }
        uint64_t cycles = b.cycle - c0;
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::string line = "{\"index\":" + std::to_string(n) + ",\"cycles\":" + std::to_string(cycles) +
                           ",\"layers\":[";
        for (size_t i = 0; i < ex.layers.size(); i++)
            line += (i ? "," : "") + std::to_string(ex.layers[i].second - ex.layers[i].first);
        line += "],\"crcs\":[";
        for (size_t i = 0; i < ex.crcs.size(); i++) line += (i ? "," : "") + std::to_string(ex.crcs[i]);
        line += "],\"reads\":[" + ex.reads + "],\"dumps\":[" + ex.dumps + "]";
        uint64_t rb = b.dbb.reads, wb = b.dbb.writes;     // AXI bursts the core issued
#if PB_HAS_SRAM
        rb += b.sram.reads; wb += b.sram.writes;
#endif
        line += ",\"bursts\":[" + std::to_string(rb) + "," + std::to_string(wb) + "]";
        line += ",\"stop\":" + stop + ",\"errors\":[";
        for (size_t i = 0; i < b.errors.size(); i++) line += (i ? "," : "") + json_str(b.errors[i]);
        char tail[64];
        std::snprintf(tail, sizeof tail, "],\"wall\":%.6f}\n", wall);
        line += tail;
        std::fputs(line.c_str(), stdout);
        std::fflush(stdout);
    }
    top->final();
    return 0;
}
