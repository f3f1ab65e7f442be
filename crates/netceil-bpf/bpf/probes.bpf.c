// SPDX-License-Identifier: GPL-2.0 OR MIT
//
// netceil's kernel probes: BTF-enabled tracepoints only (tp_btf), because lockdown refuses
// kprobes and fentry/fexit on the machines netceil is built for. Every map is bounded; a
// failed insert is counted in `overflow`, never silently dropped. Userspace reads the maps at
// the sampler's interval and turns the counters into rates and tables.
//
// Kernel types are declared here with only the fields used, marked preserve_access_index, so
// the loader relocates every field access against the running kernel's BTF (CO-RE): no
// vmlinux.h, no kernel headers.
//
// Regenerate the object with crates/netceil-bpf/bpf/build.sh (clang, libbpf-dev).

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// The SHA-256 of this file, which build.sh computes and passes to clang. It is kept in the
// object in its own section, which the loader ignores, and the crate's test reads it back
// out of the committed object and compares it with the hash of this file: an object built
// from any other source fails that test.
#ifndef NETCEIL_SOURCE_SHA256
#error "build with bpf/build.sh, which defines NETCEIL_SOURCE_SHA256 (the sha256 of this file)"
#endif
const char netceil_source_sha256[] SEC(".netceil.source_sha256") = NETCEIL_SOURCE_SHA256;

// ---- kernel types (CO-RE) ----

struct net_device {
	char name[16];
} __attribute__((preserve_access_index));

struct napi_struct {
	struct net_device *dev;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

// ---- configuration, set by the loader before load ----

// Take a kernel stack for one lock contention in every `lock_stack_every` (per CPU); 0: never.
volatile const __u32 lock_stack_every = 16;
// Frames kept per stack (the stack map's value size bounds it too).
#define STACK_DEPTH 12

// ---- overflow counters: one slot per bounded map ----

enum {
	OVF_LOCK_STAT = 0,
	OVF_LOCK_NEST = 1,
	OVF_LOCK_WAITER = 2,
	OVF_LOCK_STACK = 3,
	OVF_NAPI = 4,
	OVF_THREAD = 5,
	OVF_TARGET = 6,
	OVF_SLOTS = 8,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OVF_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} overflow SEC(".maps");

static __always_inline void count_overflow(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&overflow, &slot);
	if (v)
		*v += 1;
}

// ---- locks: lock:contention_begin / lock:contention_end ----

#define LCB_F_SPIN (1U << 0)
#define LCB_F_MUTEX (1U << 5)
#define LCB_F_RT (1U << 3)

struct lock_key {
	__u64 lock;
	__s64 stack_id; // -1: no stack taken for these events
};

struct lock_val {
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
	__u64 flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct lock_key);
	__type(value, struct lock_val);
} lock_stat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 4096);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, STACK_DEPTH * sizeof(__u64));
} lock_stacks SEC(".maps");

struct waiter {
	__u64 lock;
	__u64 start_ns;
	__u32 flags;
	__s32 stack_id;
};

// Sleeping locks (mutex, rwsem, rt): the waiter can move between CPUs, so it is keyed by
// thread. A mutex announces itself twice (optimistic spin, then sleep): the first start wins.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct waiter);
} sleep_waiters SEC(".maps");

// Spinning locks: preemption is off while spinning, so the waiter stays on its CPU; an
// interrupt can nest another contention on top, hence a small per-CPU stack.
#define SPIN_NEST 4
struct spin_stack {
	__u32 depth;
	__u32 events; // contentions seen on this CPU, for stack sampling
	struct waiter w[SPIN_NEST];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_stack);
} spin_waiters SEC(".maps");

static __always_inline int sleeping(__u32 flags)
{
	return (flags & (LCB_F_MUTEX | LCB_F_RT)) || !(flags & LCB_F_SPIN);
}

static __always_inline __s32 maybe_stack(void *ctx, struct spin_stack *s)
{
	if (!lock_stack_every)
		return -1;
	s->events++;
	if (s->events % lock_stack_every)
		return -1;
	long id = bpf_get_stackid(ctx, &lock_stacks, 0);
	if (id < 0) {
		count_overflow(OVF_LOCK_STACK);
		return -1;
	}
	return (__s32)id;
}

SEC("tp_btf/contention_begin")
int lock_begin(__u64 *ctx)
{
	__u64 lock = ctx[0];
	__u32 flags = (__u32)ctx[1];
	__u32 zero = 0;
	struct spin_stack *s = bpf_map_lookup_elem(&spin_waiters, &zero);
	if (!s)
		return 0;

	if (sleeping(flags)) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();
		struct waiter *old = bpf_map_lookup_elem(&sleep_waiters, &tid);
		if (old && old->lock == lock) {
			old->flags |= flags;
			return 0;
		}
		struct waiter w = {
			.lock = lock,
			.start_ns = bpf_ktime_get_ns(),
			.flags = flags,
			.stack_id = maybe_stack(ctx, s),
		};
		if (bpf_map_update_elem(&sleep_waiters, &tid, &w, BPF_ANY))
			count_overflow(OVF_LOCK_WAITER);
		return 0;
	}

	__u32 d = s->depth;
	if (d >= SPIN_NEST) {
		count_overflow(OVF_LOCK_NEST);
		return 0;
	}
	__s32 stack = maybe_stack(ctx, s);
	s->w[d & (SPIN_NEST - 1)].lock = lock;
	s->w[d & (SPIN_NEST - 1)].flags = flags;
	s->w[d & (SPIN_NEST - 1)].stack_id = stack;
	s->w[d & (SPIN_NEST - 1)].start_ns = bpf_ktime_get_ns();
	s->depth = d + 1;
	return 0;
}

static __always_inline void account(struct waiter *w, __u64 now)
{
	__u64 wait = now - w->start_ns;
	struct lock_key k = { .lock = w->lock, .stack_id = w->stack_id };
	struct lock_val *v = bpf_map_lookup_elem(&lock_stat, &k);
	if (!v) {
		struct lock_val init = { .flags = w->flags };
		if (bpf_map_update_elem(&lock_stat, &k, &init, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&lock_stat, &k)) {
			count_overflow(OVF_LOCK_STAT);
			return;
		}
		v = bpf_map_lookup_elem(&lock_stat, &k);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, wait);
	if (wait > v->max_ns)
		v->max_ns = wait;
	v->flags |= w->flags;
}

SEC("tp_btf/contention_end")
int lock_end(__u64 *ctx)
{
	__u64 lock = ctx[0];
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct waiter *w = bpf_map_lookup_elem(&sleep_waiters, &tid);
	if (w && w->lock == lock) {
		struct waiter copy = *w;
		bpf_map_delete_elem(&sleep_waiters, &tid);
		account(&copy, now);
		return 0;
	}

	__u32 zero = 0;
	struct spin_stack *s = bpf_map_lookup_elem(&spin_waiters, &zero);
	if (!s)
		return 0;
	__u32 d = s->depth;
	if (d == 0 || d > SPIN_NEST)
		return 0;
	__u32 top = (d - 1) & (SPIN_NEST - 1);
	if (s->w[top].lock != lock) {
		// An end without its begin (the probe attached mid-contention): forget it.
		return 0;
	}
	struct waiter copy = s->w[top];
	s->depth = d - 1;
	account(&copy, now);
	return 0;
}

// ---- softirq: irq:softirq_entry / irq:softirq_exit, runs per vector and CPU ----
//
// Every handler run is counted (at its exit). Its time is taken for one run in every
// `softirq_time_every` on each CPU (1: every run): the clock reads are most of the probe's
// cost, and a NET_RX run on loopback can be a packet's whole receive path. Userspace scales
// the timed runs' total by runs / timed per vector. One per-CPU value holds the running
// handler's start and every vector's totals, so each event costs one map lookup (softirqs
// never nest on a CPU).

#define NR_SOFTIRQS 10

volatile const __u32 softirq_time_every = 8;

struct sirq_cpu {
	__u64 start_ns; // 0: the running handler is not timed (or began before the probe)
	__u64 vec;
	__u64 skip; // runs still to let go untimed before the next timed one
	__u64 ns[NR_SOFTIRQS];    // time of the timed runs
	__u64 count[NR_SOFTIRQS]; // every run
	__u64 timed[NR_SOFTIRQS]; // the runs whose time is in ns
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sirq_cpu);
} softirq_time SEC(".maps");

SEC("tp_btf/softirq_entry")
int softirq_entry(__u64 *ctx)
{
	__u32 zero = 0;
	struct sirq_cpu *c = bpf_map_lookup_elem(&softirq_time, &zero);
	if (!c)
		return 0;
	// A countdown rather than a modulo: no division on every run.
	if (c->skip) {
		c->skip -= 1;
		c->start_ns = 0;
		return 0;
	}
	c->skip = softirq_time_every > 1 ? softirq_time_every - 1 : 0;
	c->start_ns = bpf_ktime_get_ns();
	c->vec = ctx[0];
	return 0;
}

SEC("tp_btf/softirq_exit")
int softirq_exit(__u64 *ctx)
{
	__u32 zero = 0;
	__u64 vec = (__u32)ctx[0];
	struct sirq_cpu *c = bpf_map_lookup_elem(&softirq_time, &zero);
	if (!c || vec >= NR_SOFTIRQS)
		return 0;
	c->count[vec] += 1;
	if (!c->start_ns || c->vec != vec)
		return 0;
	c->ns[vec] += bpf_ktime_get_ns() - c->start_ns;
	c->timed[vec] += 1;
	c->start_ns = 0;
	return 0;
}

// ---- napi: napi:napi_poll, per NAPI instance ----
//
// Counted per CPU and per NAPI instance (keyed by the napi_struct's address). A CPU polls few
// instances (on loopback one: its own backlog), so each CPU keeps its first NAPI_SLOTS
// instances in a per-CPU array: an event is one inlined array lookup and a scan of at most
// NAPI_SLOTS keys, no hashing. Instances beyond those slots go to a per-CPU hash map. The
// device name is read only when an instance is first seen; userspace sums both maps by name.

#define NAPI_SLOTS 4

struct napi_val {
	__u64 polls;
	__u64 packets;
	__u64 exhausted; // polls where work reached the budget
	__u64 budget;    // the budget of the last poll
	char dev[16];    // "" for the per-CPU backlog (no device)
};

struct napi_cpu {
	__u64 key[NAPI_SLOTS]; // 0: free slot
	struct napi_val v[NAPI_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct napi_cpu);
} napi_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct napi_val);
} napi_stat SEC(".maps");

static __always_inline void napi_name(struct napi_struct *napi, char *dev)
{
	struct net_device *d = napi->dev;
	if (d)
		bpf_probe_read_kernel_str(dev, 16, d->name);
}

static __always_inline void napi_count(struct napi_val *v, int work, int budget)
{
	v->polls += 1;
	if (work > 0)
		v->packets += work;
	if (budget > 0 && work >= budget)
		v->exhausted += 1;
	v->budget = budget;
}

// An instance beyond this CPU's slots: the hash map.
static __always_inline void napi_overflow(struct napi_struct *napi, __u64 key, int work,
					  int budget)
{
	struct napi_val *v = bpf_map_lookup_elem(&napi_stat, &key);
	if (!v) {
		struct napi_val init = {};
		napi_name(napi, init.dev);
		if (bpf_map_update_elem(&napi_stat, &key, &init, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&napi_stat, &key)) {
			count_overflow(OVF_NAPI);
			return;
		}
		v = bpf_map_lookup_elem(&napi_stat, &key);
		if (!v)
			return;
	}
	napi_count(v, work, budget);
}

SEC("tp_btf/napi_poll")
int napi_poll(__u64 *ctx)
{
	struct napi_struct *napi = (void *)ctx[0];
	__u64 key = ctx[0];
	int work = (int)ctx[1];
	int budget = (int)ctx[2];
	__u32 zero = 0;
	struct napi_cpu *c = bpf_map_lookup_elem(&napi_slots, &zero);
	if (!c || !key)
		return 0;
	for (int i = 0; i < NAPI_SLOTS; i++) {
		if (c->key[i] == key) {
			napi_count(&c->v[i], work, budget);
			return 0;
		}
		if (!c->key[i]) {
			// Per-CPU: nothing else writes this slot while we fill it.
			c->key[i] = key;
			napi_name(napi, c->v[i].dev);
			napi_count(&c->v[i], work, budget);
			return 0;
		}
	}
	napi_overflow(napi, key, work, budget);
	return 0;
}

// ---- offcpu: sched:sched_switch, sched_wakeup(_new), sched_process_fork ----

// Processes (tgid) whose threads are followed; children of a followed process join it.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

enum { ST_RUNNING = 1, ST_BLOCKED = 2, ST_RUNNABLE = 3 };
#define TASK_DEAD 0x80

struct thread_state {
	__u64 since_ns;
	__u32 state;
	__u32 tgid;
};

struct thread_val {
	__u64 on_ns;
	__u64 blocked_ns;
	__u64 runnable_ns;
	__u64 voluntary;
	__u64 involuntary;
	__u64 tgid;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct thread_state);
} thread_states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct thread_val);
} thread_stat SEC(".maps");

static __always_inline struct thread_val *thread_of(__u32 tid, __u32 tgid)
{
	struct thread_val *v = bpf_map_lookup_elem(&thread_stat, &tid);
	if (v)
		return v;
	struct thread_val init = { .tgid = tgid };
	if (bpf_map_update_elem(&thread_stat, &tid, &init, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&thread_stat, &tid)) {
		count_overflow(OVF_THREAD);
		return 0;
	}
	return bpf_map_lookup_elem(&thread_stat, &tid);
}

static __always_inline void set_state(__u32 tid, __u32 tgid, __u32 state, __u64 now)
{
	struct thread_state s = { .since_ns = now, .state = state, .tgid = tgid };
	if (bpf_map_update_elem(&thread_states, &tid, &s, BPF_ANY))
		count_overflow(OVF_THREAD);
}

SEC("tp_btf/sched_switch")
int sched_switch(__u64 *ctx)
{
	int preempt = (int)(ctx[0] & 0xff);
	struct task_struct *prev = (void *)ctx[1];
	struct task_struct *next = (void *)ctx[2];
	__u32 prev_state = (__u32)ctx[3];
	__u64 now = bpf_ktime_get_ns();

	__u32 ptgid = prev->tgid;
	if (bpf_map_lookup_elem(&targets, &ptgid)) {
		__u32 tid = prev->pid;
		if (prev_state & TASK_DEAD) {
			// Its last switch: the thread is gone, and so is its state (its totals stay).
			struct thread_state *s = bpf_map_lookup_elem(&thread_states, &tid);
			struct thread_val *v = bpf_map_lookup_elem(&thread_stat, &tid);
			if (s && v && s->state == ST_RUNNING)
				__sync_fetch_and_add(&v->on_ns, now - s->since_ns);
			bpf_map_delete_elem(&thread_states, &tid);
			goto next;
		}
		struct thread_val *v = thread_of(tid, ptgid);
		struct thread_state *s = bpf_map_lookup_elem(&thread_states, &tid);
		if (v) {
			if (s && s->state == ST_RUNNING)
				__sync_fetch_and_add(&v->on_ns, now - s->since_ns);
			int involuntary = preempt || prev_state == 0;
			if (involuntary)
				__sync_fetch_and_add(&v->involuntary, 1);
			else
				__sync_fetch_and_add(&v->voluntary, 1);
			set_state(tid, ptgid, involuntary ? ST_RUNNABLE : ST_BLOCKED, now);
		}
	}
next:
	;

	__u32 ntgid = next->tgid;
	if (bpf_map_lookup_elem(&targets, &ntgid)) {
		__u32 tid = next->pid;
		struct thread_val *v = thread_of(tid, ntgid);
		struct thread_state *s = bpf_map_lookup_elem(&thread_states, &tid);
		if (v && s) {
			__u64 d = now - s->since_ns;
			if (s->state == ST_BLOCKED)
				__sync_fetch_and_add(&v->blocked_ns, d);
			else if (s->state == ST_RUNNABLE)
				__sync_fetch_and_add(&v->runnable_ns, d);
		}
		set_state(tid, ntgid, ST_RUNNING, now);
	}
	return 0;
}

static __always_inline int wakeup(struct task_struct *p)
{
	__u32 tgid = p->tgid;
	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	__u32 tid = p->pid;
	struct thread_state *s = bpf_map_lookup_elem(&thread_states, &tid);
	if (!s || s->state != ST_BLOCKED)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct thread_val *v = thread_of(tid, tgid);
	if (v)
		__sync_fetch_and_add(&v->blocked_ns, now - s->since_ns);
	s->since_ns = now;
	s->state = ST_RUNNABLE;
	return 0;
}

SEC("tp_btf/sched_wakeup")
int sched_wakeup(__u64 *ctx)
{
	return wakeup((void *)ctx[0]);
}

SEC("tp_btf/sched_wakeup_new")
int sched_wakeup_new(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	__u32 tgid = p->tgid;
	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	set_state(p->pid, tgid, ST_RUNNABLE, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/sched_process_fork")
int sched_fork(__u64 *ctx)
{
	struct task_struct *parent = (void *)ctx[0];
	struct task_struct *child = (void *)ctx[1];
	__u32 ptgid = parent->tgid;
	if (!bpf_map_lookup_elem(&targets, &ptgid))
		return 0;
	__u32 ctgid = child->tgid;
	__u8 one = 1;
	if (ctgid != ptgid && bpf_map_update_elem(&targets, &ctgid, &one, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&targets, &ctgid))
		count_overflow(OVF_TARGET);
	return 0;
}
