/*
 * Checks ernic's libibverbs through the C API, as a program built against
 * rdma-core's <infiniband/verbs.h> calls it (the inline functions of the
 * header included). One process, one device: two QPs of each kind talk to
 * each other through the device's own GID. Each case prints "ok NAME" when
 * it holds; the first that does not prints "FAIL NAME: why" and exits 1.
 *
 * Build: cc -o verbs_check verbs_check.c -libverbs
 * Run:   LD_LIBRARY_PATH=<dir with ernic's libibverbs.so.1> ./verbs_check
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *current = "setup";

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("FAIL %s: ", current);                          \
			printf(__VA_ARGS__);                                   \
			printf(" (line %d, errno %d)\n", __LINE__, errno);     \
			exit(1);                                               \
		}                                                              \
	} while (0)

static void pass(void) { printf("ok %s\n", current); fflush(stdout); }

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;

enum { LEN = 4096, DEPTH = 16 };

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Polls `cq` for one completion, for at most 10 s. */
static struct ibv_wc wait_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	double end = now_s() + 10;
	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);
		CHECK(n >= 0, "ibv_poll_cq answered %d", n);
		if (n == 1)
			return wc;
		CHECK(now_s() < end, "no completion in 10 s");
	}
}

/* Nothing more comes on `cq` within 50 ms. */
static void quiet(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	double end = now_s() + 0.05;
	while (now_s() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "an unexpected completion, status %s",
		      ibv_wc_status_str(wc.status));
}

static void make(struct side *s, enum ibv_qp_type type, int access)
{
	s->cq = ibv_create_cq(ctx, 2 * DEPTH, NULL, NULL, 0);
	CHECK(s->cq, "ibv_create_cq");
	s->buf = aligned_alloc(4096, LEN);
	memset(s->buf, 0, LEN);
	s->mr = ibv_reg_mr(pd, s->buf, LEN, access);
	CHECK(s->mr, "ibv_reg_mr");
	struct ibv_qp_init_attr init = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
		.qp_type = type,
	};
	s->qp = ibv_create_qp(pd, &init);
	CHECK(s->qp, "ibv_create_qp");
	CHECK(init.cap.max_send_wr >= DEPTH, "caps written back");
}

/* The rnr_retry the next QPs go to RTS with. */
static uint8_t rnr_retry;

static void to_rts(struct side *s, uint32_t dest_qpn, int qp_access)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
				 .port_num = 1, .qp_access_flags = qp_access };
	CHECK(!ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	      "to INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 7;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	CHECK(!ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
	      "to RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.sq_psn = 7;
	a.max_rd_atomic = 1;
	CHECK(!ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					    IBV_QP_MAX_QP_RD_ATOMIC),
	      "to RTS");
	CHECK(s->qp->state == IBV_QPS_RTS, "qp->state follows");
}

static const int ALL = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

static void pair(struct side *a, struct side *b, enum ibv_qp_type type)
{
	make(a, type, ALL);
	make(b, type, ALL);
	int qpa = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	to_rts(a, b->qp->qp_num, qpa);
	to_rts(b, a->qp->qp_num, qpa);
}

static void unpair(struct side *s)
{
	CHECK(!ibv_destroy_qp(s->qp), "ibv_destroy_qp");
	CHECK(!ibv_destroy_cq(s->cq), "ibv_destroy_cq");
	CHECK(!ibv_dereg_mr(s->mr), "ibv_dereg_mr");
	free(s->buf);
}

static int post_recv(struct side *s, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
	return ibv_post_recv(s->qp, &wr, &bad);
}

static int post(struct side *s, enum ibv_wr_opcode op, uint64_t id, uint32_t off,
		uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned flags)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED | flags },
			   *bad = NULL;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htobe32(0x11223344);
	int r = ibv_post_send(s->qp, &wr, &bad);
	if (r)
		CHECK(bad == &wr, "bad_wr names the refused request");
	return r;
}

static int post_atomic(struct side *s, enum ibv_wr_opcode op, uint64_t raddr,
		       uint32_t rkey, uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)s->buf, 8, s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 99, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(s->qp, &wr, &bad);
}

static void device(void)
{
	current = "device";
	int n = -1;
	struct ibv_device **list = ibv_get_device_list(&n);
	CHECK(list && n == 1 && list[1] == NULL, "one device, got %d", n);
	CHECK(!strcmp(ibv_get_device_name(list[0]), "ernic0"), "named ernic0");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx, "ibv_open_device");
	ibv_free_device_list(list);
	struct ibv_device_attr da;
	CHECK(!ibv_query_device(ctx, &da), "ibv_query_device");
	CHECK(da.phys_port_cnt == 1 && da.max_qp > 0 && da.max_sge >= 2, "sane attributes");
	struct ibv_device_attr_ex dx;
	CHECK(!ibv_query_device_ex(ctx, NULL, &dx), "ibv_query_device_ex");
	CHECK(dx.orig_attr.max_qp == da.max_qp, "the same attributes");
	struct ibv_port_attr pa;
	CHECK(!ibv_query_port(ctx, 1, &pa), "ibv_query_port");
	CHECK(pa.state == IBV_PORT_ACTIVE && pa.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "an active Ethernet port");
	CHECK(ibv_query_port(ctx, 2, &pa) != 0, "port 2 does not exist");
	CHECK(!ibv_query_gid(ctx, 1, 0, &gid), "ibv_query_gid");
	struct ibv_gid_entry ge;
	CHECK(!ibv_query_gid_ex(ctx, 1, 0, &ge, 0), "ibv_query_gid_ex");
	CHECK(ge.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(&ge.gid, &gid, 16),
	      "GID 0 is RoCE v2");
	uint16_t pkey;
	CHECK(!ibv_query_pkey(ctx, 1, 0, &pkey) && pkey == 0xffff, "the default P_Key");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "ibv_alloc_pd");
	pass();
}

static void mr_access(void)
{
	current = "mr_access";
	char *b = malloc(64);
	errno = 0;
	CHECK(!ibv_reg_mr(pd, b, 64, IBV_ACCESS_REMOTE_WRITE) && errno == EINVAL,
	      "remote write without local write is refused");
	CHECK(!ibv_reg_mr(pd, b, 0, IBV_ACCESS_LOCAL_WRITE), "an empty region is refused");
	struct ibv_mr *mr = ibv_reg_mr(pd, b, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	CHECK(mr && mr->addr == b && mr->length == 64, "optional flags are taken");
	CHECK(!ibv_dereg_mr(mr), "dereg");
	free(b);
	pass();
}

static void rc_data(void)
{
	current = "rc_data";
	struct side a, b;
	pair(&a, &b, IBV_QPT_RC);
	/* SEND with immediate into a posted receive. */
	strcpy(a.buf, "hello over ernic");
	CHECK(!post_recv(&b, 1, 0, LEN), "post_recv");
	CHECK(!post(&a, IBV_WR_SEND_WITH_IMM, 2, 0, 17, a.mr->lkey, 0, 0, 0), "post SEND");
	struct ibv_wc w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_SUCCESS && w.wr_id == 2 && w.opcode == IBV_WC_SEND,
	      "send completes: %s", ibv_wc_status_str(w.status));
	w = wait_one(b.cq);
	CHECK(w.status == IBV_WC_SUCCESS && w.wr_id == 1 && w.opcode == IBV_WC_RECV &&
		      w.byte_len == 17 && (w.wc_flags & IBV_WC_WITH_IMM) &&
		      be32toh(w.imm_data) == 0x11223344 && w.qp_num == b.qp->qp_num,
	      "the receive: len %u flags %#x imm %#x", w.byte_len, w.wc_flags, w.imm_data);
	CHECK(!strcmp(b.buf, "hello over ernic"), "the bytes");
	/* Inline SEND. */
	CHECK(!post_recv(&b, 3, 100, 64), "post_recv");
	strcpy(a.buf + 200, "inline!");
	CHECK(!post(&a, IBV_WR_SEND, 4, 200, 8, 0, 0, 0, IBV_SEND_INLINE), "inline SEND (no key)");
	CHECK(wait_one(a.cq).status == IBV_WC_SUCCESS, "inline send completes");
	w = wait_one(b.cq);
	CHECK(w.status == IBV_WC_SUCCESS && !strcmp(b.buf + 100, "inline!"), "inline bytes");
	/* RDMA WRITE, then READ it back. */
	for (int i = 0; i < 512; i++)
		a.buf[1024 + i] = (char)(i * 7);
	CHECK(!post(&a, IBV_WR_RDMA_WRITE, 5, 1024, 512, a.mr->lkey,
		    (uintptr_t)b.buf + 2048, b.mr->rkey, 0), "post WRITE");
	CHECK(wait_one(a.cq).status == IBV_WC_SUCCESS, "write completes");
	CHECK(!memcmp(b.buf + 2048, a.buf + 1024, 512), "written bytes");
	CHECK(!post(&a, IBV_WR_RDMA_READ, 6, 3072, 512, a.mr->lkey,
		    (uintptr_t)b.buf + 2048, b.mr->rkey, 0), "post READ");
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_SUCCESS && w.opcode == IBV_WC_RDMA_READ, "read completes");
	CHECK(!memcmp(a.buf + 3072, a.buf + 1024, 512), "read bytes");
	/* WRITE with immediate consumes a receive. */
	CHECK(!post_recv(&b, 7, 0, 0), "post_recv");
	CHECK(!post(&a, IBV_WR_RDMA_WRITE_WITH_IMM, 8, 1024, 16, a.mr->lkey,
		    (uintptr_t)b.buf + 64, b.mr->rkey, 0), "post WRITE_IMM");
	CHECK(wait_one(a.cq).status == IBV_WC_SUCCESS, "write_imm completes");
	w = wait_one(b.cq);
	CHECK(w.opcode == IBV_WC_RECV_RDMA_WITH_IMM && (w.wc_flags & IBV_WC_WITH_IMM),
	      "RECV_RDMA_WITH_IMM, opcode %d", w.opcode);
	/* Atomics on 8 aligned bytes. */
	uint64_t *target = (uint64_t *)(b.buf + 512);
	*target = 40;
	CHECK(!post_atomic(&a, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)target, b.mr->rkey, 2, 0),
	      "post FETCH_ADD");
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_SUCCESS && w.opcode == IBV_WC_FETCH_ADD, "fetch-add completes");
	CHECK(*(uint64_t *)a.buf == 40 && *target == 42, "fetched 40, now 42");
	CHECK(!post_atomic(&a, IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)target, b.mr->rkey, 42, 7),
	      "post CMP_SWP");
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_SUCCESS && *target == 7, "swapped");
	/* ibv_query_qp says what was set. */
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	CHECK(!ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qi), "ibv_query_qp");
	CHECK(qa.qp_state == IBV_QPS_RTS && qa.dest_qp_num == b.qp->qp_num &&
		      qa.timeout == 14 && qi.qp_type == IBV_QPT_RC && qi.send_cq == a.cq,
	      "query answers state %d dest %u", qa.qp_state, qa.dest_qp_num);
	unpair(&a);
	unpair(&b);
	pass();
}

static void rc_errors(void)
{
	struct side a, b;
	struct ibv_wc w;

	current = "bad_lkey";
	pair(&a, &b, IBV_QPT_RC);
	CHECK(!post(&a, IBV_WR_RDMA_WRITE, 1, 0, 16, a.mr->lkey ^ 0x5500,
		    (uintptr_t)b.buf, b.mr->rkey, 0), "post");
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_LOC_PROT_ERR, "got %s", ibv_wc_status_str(w.status));
	unpair(&a);
	unpair(&b);
	pass();

	current = "bad_rkey";
	pair(&a, &b, IBV_QPT_RC);
	CHECK(!post(&a, IBV_WR_RDMA_WRITE, 1, 0, 16, a.mr->lkey, (uintptr_t)b.buf,
		    b.mr->rkey ^ 0x5500, 0), "post");
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_REM_ACCESS_ERR, "got %s", ibv_wc_status_str(w.status));
	unpair(&a);
	unpair(&b);
	pass();

	current = "out_of_range_rkey";
	pair(&a, &b, IBV_QPT_RC);
	CHECK(!post(&a, IBV_WR_RDMA_WRITE, 1, 0, 64, a.mr->lkey,
		    (uintptr_t)b.buf + LEN - 32, b.mr->rkey, 0), "post");
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_REM_ACCESS_ERR, "got %s", ibv_wc_status_str(w.status));
	unpair(&a);
	unpair(&b);
	pass();

	current = "small_receive";
	pair(&a, &b, IBV_QPT_RC);
	CHECK(!post_recv(&b, 1, 0, 8), "post_recv of 8 bytes");
	CHECK(!post(&a, IBV_WR_SEND, 2, 0, 64, a.mr->lkey, 0, 0, 0), "SEND of 64");
	w = wait_one(b.cq);
	CHECK(w.status == IBV_WC_LOC_LEN_ERR && w.wr_id == 1, "receiver: %s",
	      ibv_wc_status_str(w.status));
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_REM_INV_REQ_ERR, "sender: %s", ibv_wc_status_str(w.status));
	unpair(&a);
	unpair(&b);
	pass();

	/* The test runs with ERNIC_RNR_TIMEOUT_MS=200, the wait of a QP that
	 * set no rnr_retry; these set it, and the peer's min_rnr_timer is 12
	 * (0.64 ms). rnr_retry 0: the first refusal is the last. */
	current = "rnr";
	pair(&a, &b, IBV_QPT_RC);
	double t0 = now_s();
	CHECK(!post(&a, IBV_WR_SEND, 2, 0, 8, a.mr->lkey, 0, 0, 0), "SEND, no receive");
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_RNR_RETRY_EXC_ERR, "got %s", ibv_wc_status_str(w.status));
	CHECK(now_s() - t0 < 0.1, "rnr_retry 0 waited %.3f s", now_s() - t0);
	unpair(&a);
	unpair(&b);
	pass();

	/* Three retries of 0.64 ms: about 2 ms, not 200. */
	current = "rnr_retry";
	rnr_retry = 3;
	pair(&a, &b, IBV_QPT_RC);
	t0 = now_s();
	CHECK(!post(&a, IBV_WR_SEND, 2, 0, 8, a.mr->lkey, 0, 0, 0), "SEND, no receive");
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_RNR_RETRY_EXC_ERR, "got %s", ibv_wc_status_str(w.status));
	double waited = now_s() - t0;
	CHECK(waited >= 0.0019 && waited < 0.1, "rnr_retry 3 waited %.4f s", waited);
	unpair(&a);
	unpair(&b);
	/* 7 retries without limit: past the 200 ms a receive still takes it. */
	rnr_retry = 7;
	pair(&a, &b, IBV_QPT_RC);
	CHECK(!post(&a, IBV_WR_SEND, 3, 0, 8, a.mr->lkey, 0, 0, 0), "SEND, no receive");
	t0 = now_s();
	while (now_s() - t0 < 0.3)
		CHECK(ibv_poll_cq(a.cq, 1, &w) == 0, "completed before a receive: %s",
		      ibv_wc_status_str(w.status));
	CHECK(!post_recv(&b, 4, 0, 64), "post_recv");
	w = wait_one(a.cq);
	CHECK(w.status == IBV_WC_SUCCESS && w.wr_id == 3, "got %s",
	      ibv_wc_status_str(w.status));
	w = wait_one(b.cq);
	CHECK(w.status == IBV_WC_SUCCESS && w.wr_id == 4, "receiver got %s",
	      ibv_wc_status_str(w.status));
	unpair(&a);
	unpair(&b);
	rnr_retry = 0;
	pass();

	current = "destroyed_peer";
	pair(&a, &b, IBV_QPT_RC);
	CHECK(!ibv_destroy_qp(b.qp), "destroy the peer");
	CHECK(!post(&a, IBV_WR_RDMA_WRITE, 1, 0, 16, a.mr->lkey, (uintptr_t)b.buf,
		    b.mr->rkey, 0), "post to it");
	w = wait_one(a.cq);
	CHECK(w.status != IBV_WC_SUCCESS, "a write to a destroyed QP fails");
	CHECK(!ibv_destroy_qp(a.qp) && !ibv_destroy_cq(a.cq) && !ibv_destroy_cq(b.cq),
	      "teardown");
	ibv_dereg_mr(a.mr);
	ibv_dereg_mr(b.mr);
	free(a.buf);
	free(b.buf);
	pass();

	current = "flush";
	pair(&a, &b, IBV_QPT_RC);
	for (int i = 0; i < 3; i++)
		CHECK(!post_recv(&b, 10 + i, 0, 64), "post_recv");
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	CHECK(!ibv_modify_qp(b.qp, &err, IBV_QP_STATE), "to ERROR");
	for (int i = 0; i < 3; i++) {
		w = wait_one(b.cq);
		CHECK(w.status == IBV_WC_WR_FLUSH_ERR && w.wr_id == (uint64_t)(10 + i),
		      "receive %d flushed in order: %s", i, ibv_wc_status_str(w.status));
	}
	quiet(b.cq);
	unpair(&a);
	unpair(&b);
	pass();

	current = "bad_post";
	pair(&a, &b, IBV_QPT_RC);
	{
		struct ibv_sge sge[40];
		memset(sge, 0, sizeof sge);
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = sge, .num_sge = 40,
					  .opcode = IBV_WR_SEND }, *bad = NULL;
		CHECK(ibv_post_send(a.qp, &wr, &bad) != 0 && bad == &wr, "too many SGEs refused");
		struct ibv_send_wr bogus = { .wr_id = 2, .opcode = 77 };
		CHECK(ibv_post_send(a.qp, &bogus, &bad) != 0 && bad == &bogus,
		      "an unknown opcode is refused");
	}
	struct ibv_qp_attr back = { .qp_state = IBV_QPS_RTR };
	CHECK(ibv_modify_qp(a.qp, &back, IBV_QP_STATE) != 0, "RTS to RTR is refused");
	unpair(&a);
	unpair(&b);
	pass();
}

static void channel(void)
{
	current = "channel";
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	CHECK(ch && ch->fd >= 0, "ibv_create_comp_channel");
	struct side a, b;
	make(&a, IBV_QPT_RC, ALL);
	b.buf = aligned_alloc(4096, LEN);
	b.mr = ibv_reg_mr(pd, b.buf, LEN, ALL);
	int tag;
	b.cq = ibv_create_cq(ctx, DEPTH, &tag, ch, 0);
	CHECK(b.cq && b.cq->channel == ch, "a CQ on the channel");
	struct ibv_qp_init_attr init = {
		.send_cq = b.cq, .recv_cq = b.cq,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	b.qp = ibv_create_qp(pd, &init);
	CHECK(b.qp, "qp");
	to_rts(&a, b.qp->qp_num, IBV_ACCESS_REMOTE_WRITE);
	to_rts(&b, a.qp->qp_num, IBV_ACCESS_REMOTE_WRITE);
	CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "a channel with a CQ stays");
	/* Non-blocking fd: nothing yet. */
	int fl = fcntl(ch->fd, F_GETFL);
	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN,
	      "no event before arming");
	CHECK(!ibv_req_notify_cq(b.cq, 0), "arm");
	CHECK(!post_recv(&b, 1, 0, 64), "post_recv");
	CHECK(!post(&a, IBV_WR_SEND, 2, 0, 8, a.mr->lkey, 0, 0, 0), "SEND");
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	CHECK(poll(&p, 1, 10000) == 1 && (p.revents & POLLIN), "poll(2) wakes");
	CHECK(!ibv_get_cq_event(ch, &ev_cq, &ev_ctx), "the event");
	CHECK(ev_cq == b.cq && ev_ctx == &tag, "names the CQ and its context");
	ibv_ack_cq_events(ev_cq, 1);
	struct ibv_wc w = wait_one(b.cq);
	CHECK(w.status == IBV_WC_SUCCESS && w.wr_id == 1, "the receive");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN,
	      "one event per arming");
	/* Blocking: the event comes from the second receive. */
	fcntl(ch->fd, F_SETFL, fl);
	CHECK(!ibv_req_notify_cq(b.cq, 0), "arm again");
	CHECK(!post_recv(&b, 3, 0, 64), "post_recv");
	CHECK(!post(&a, IBV_WR_SEND, 4, 0, 8, a.mr->lkey, 0, 0, 0), "SEND");
	CHECK(!ibv_get_cq_event(ch, &ev_cq, &ev_ctx) && ev_cq == b.cq, "a blocking wait");
	ibv_ack_cq_events(ev_cq, 1);
	CHECK(wait_one(b.cq).wr_id == 3, "the second receive");
	unpair(&a);
	unpair(&b);
	CHECK(!ibv_destroy_comp_channel(ch), "the channel goes last");
	pass();
}

static void srq_limit(void)
{
	current = "srq";
	struct ibv_srq_init_attr si = { .attr = { .max_wr = DEPTH, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &si);
	CHECK(srq, "ibv_create_srq");
	struct side a, b;
	make(&a, IBV_QPT_RC, ALL);
	b.buf = aligned_alloc(4096, LEN);
	b.mr = ibv_reg_mr(pd, b.buf, LEN, ALL);
	b.cq = ibv_create_cq(ctx, DEPTH, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.send_cq = b.cq, .recv_cq = b.cq, .srq = srq,
		.cap = { .max_send_wr = DEPTH, .max_send_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	b.qp = ibv_create_qp(pd, &init);
	CHECK(b.qp, "a QP on the SRQ");
	to_rts(&a, b.qp->qp_num, 0);
	to_rts(&b, a.qp->qp_num, 0);
	for (int i = 0; i < 4; i++) {
		struct ibv_sge sge = { (uintptr_t)b.buf + 64 * i, 64, b.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1 }, *bad;
		CHECK(!ibv_post_srq_recv(srq, &wr, &bad), "ibv_post_srq_recv");
	}
	struct ibv_srq_attr sa = { .srq_limit = 3 };
	CHECK(!ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), "arm the limit");
	CHECK(!post(&a, IBV_WR_SEND, 1, 0, 8, a.mr->lkey, 0, 0, 0), "SEND");
	CHECK(!post(&a, IBV_WR_SEND, 2, 0, 8, a.mr->lkey, 0, 0, 0), "SEND");
	struct ibv_wc w = wait_one(b.cq);
	CHECK(w.wr_id == 100 && w.status == IBV_WC_SUCCESS, "first SRQ receive");
	CHECK(wait_one(b.cq).wr_id == 101, "second, in order");
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	CHECK(poll(&p, 1, 10000) == 1, "async_fd wakes");
	struct ibv_async_event ev;
	CHECK(!ibv_get_async_event(ctx, &ev), "ibv_get_async_event");
	CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq,
	      "SRQ limit reached, got %s", ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	unpair(&a);
	unpair(&b);
	CHECK(!ibv_destroy_srq(srq), "ibv_destroy_srq");
	pass();
}

static void ud(void)
{
	current = "ud";
	struct side a, b;
	make(&a, IBV_QPT_UD, ALL);
	make(&b, IBV_QPT_UD, ALL);
	struct side *s[2] = { &a, &b };
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr x = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x1111 };
		CHECK(!ibv_modify_qp(s[i]->qp, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							   IBV_QP_QKEY), "UD INIT");
		x.qp_state = IBV_QPS_RTR;
		CHECK(!ibv_modify_qp(s[i]->qp, &x, IBV_QP_STATE), "UD RTR");
		x.qp_state = IBV_QPS_RTS;
		x.sq_psn = 1;
		CHECK(!ibv_modify_qp(s[i]->qp, &x, IBV_QP_STATE | IBV_QP_SQ_PSN), "UD RTS");
	}
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1 };
	ah_attr.grh.dgid = gid;
	struct ibv_ah *ah = ibv_create_ah(pd, &ah_attr);
	CHECK(ah, "ibv_create_ah");
	CHECK(!post_recv(&b, 1, 0, 40 + 64), "post_recv with room for the GRH");
	strcpy(a.buf, "datagram");
	struct ibv_sge sge = { (uintptr_t)a.buf, 9, a.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b.qp->qp_num;
	wr.wr.ud.remote_qkey = 0x1111;
	CHECK(!ibv_post_send(a.qp, &wr, &bad), "UD SEND");
	CHECK(wait_one(a.cq).status == IBV_WC_SUCCESS, "sent");
	struct ibv_wc w = wait_one(b.cq);
	CHECK(w.status == IBV_WC_SUCCESS && (w.wc_flags & IBV_WC_GRH) && w.byte_len == 40 + 9 &&
		      w.src_qp == a.qp->qp_num && !strcmp(b.buf + 40, "datagram"),
	      "received with a GRH: len %u src %u", w.byte_len, w.src_qp);
	struct ibv_ah *back = ibv_create_ah_from_wc(pd, &w, (struct ibv_grh *)b.buf, 1);
	CHECK(back, "an AH back to the sender, from its GRH");
	CHECK(!ibv_destroy_ah(back) && !ibv_destroy_ah(ah), "ibv_destroy_ah");
	unpair(&a);
	unpair(&b);
	pass();
}

/* The extended CQ's poll API and the new post-send API. */
static void extended(void)
{
	current = "extended";
	struct ibv_cq_init_attr_ex cx = {
		.cqe = DEPTH,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &cx);
	CHECK(cq, "ibv_create_cq_ex");
	struct side a, b;
	a.cq = ibv_cq_ex_to_cq(cq);
	a.buf = aligned_alloc(4096, LEN);
	a.mr = ibv_reg_mr(pd, a.buf, LEN, ALL);
	struct ibv_qp_init_attr_ex qx = {
		.send_cq = a.cq, .recv_cq = a.cq,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 2, .max_recv_sge = 1, .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
	};
	a.qp = ibv_create_qp_ex(ctx, &qx);
	CHECK(a.qp, "ibv_create_qp_ex");
	make(&b, IBV_QPT_RC, ALL);
	to_rts(&a, b.qp->qp_num, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	to_rts(&b, a.qp->qp_num, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a.qp);
	CHECK(x && x->wr_start, "the new post-send API is there");
	CHECK(!post_recv(&b, 50, 0, 64), "post_recv");
	for (int i = 0; i < 256; i++)
		a.buf[i] = (char)(255 - i);
	uint64_t *counter = (uint64_t *)(b.buf + 1024);
	*counter = 5;
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, b.mr->rkey, (uintptr_t)b.buf + 512);
	struct ibv_sge two[2] = { { (uintptr_t)a.buf, 100, a.mr->lkey },
				  { (uintptr_t)a.buf + 100, 156, a.mr->lkey } };
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 2;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send_imm(x, htobe32(0xabcdef));
	ibv_wr_set_inline_data(x, "new API", 8);
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(x, b.mr->rkey, (uintptr_t)counter, 10);
	ibv_wr_set_sge(x, a.mr->lkey, (uintptr_t)a.buf + 2048, 8);
	CHECK(!ibv_wr_complete(x), "ibv_wr_complete posts the three");
	/* Their completions, through the extended poll API. */
	int seen = 0;
	double end = now_s() + 10;
	while (seen < 3) {
		struct ibv_poll_cq_attr pa = {};
		int r = ibv_start_poll(cq, &pa);
		if (r == ENOENT) {
			CHECK(now_s() < end, "completions in 10 s, %d seen", seen);
			continue;
		}
		CHECK(r == 0, "ibv_start_poll: %d", r);
		do {
			seen++;
			CHECK(cq->status == IBV_WC_SUCCESS && cq->wr_id == (uint64_t)seen,
			      "completion %d: %s, wr_id %llu", seen,
			      ibv_wc_status_str(cq->status), (unsigned long long)cq->wr_id);
			CHECK(ibv_wc_read_qp_num(cq) == a.qp->qp_num, "its QP");
		} while (seen < 3 && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	CHECK(!memcmp(b.buf + 512, a.buf, 256), "the two-SGE write landed");
	CHECK(*counter == 15 && *(uint64_t *)(a.buf + 2048) == 5, "fetch-add");
	struct ibv_wc w = wait_one(b.cq);
	CHECK(w.status == IBV_WC_SUCCESS && w.byte_len == 8 && !strcmp(b.buf, "new API") &&
		      be32toh(w.imm_data) == 0xabcdef,
	      "the inline send with immediate");
	/* A batch that is aborted posts nothing. */
	ibv_wr_start(x);
	x->wr_id = 9;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a.mr->lkey, (uintptr_t)a.buf, 8);
	ibv_wr_abort(x);
	quiet(a.cq);
	/* A request past the QP's SGE limit fails the batch. */
	ibv_wr_start(x);
	struct ibv_sge three[3] = { two[0], two[1], two[0] };
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 3, three);
	CHECK(ibv_wr_complete(x) != 0, "three SGEs on a QP of two are refused");
	quiet(a.cq);
	unpair(&a);
	unpair(&b);
	pass();
}

static void unsupported(void)
{
	current = "unsupported";
	errno = 0;
	CHECK(!ibv_alloc_mw(pd, IBV_MW_TYPE_1) && errno, "no memory windows");
	struct ibv_cq_init_attr_ex cx = { .cqe = 4,
					  .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
	errno = 0;
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &cx);
	CHECK(!cq && errno == EOPNOTSUPP, "no completion timestamps, errno set");
	CHECK(ibv_resize_cq(NULL, 4) == EOPNOTSUPP, "no resize");
	pass();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	device();
	mr_access();
	rc_data();
	rc_errors();
	channel();
	srq_limit();
	ud();
	extended();
	unsupported();
	CHECK(!ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	CHECK(!ibv_close_device(ctx), "ibv_close_device");
	current = "done";
	pass();
	return 0;
}
