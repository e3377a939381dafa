/*
 * Checks ernic's librdmacm through the C API, as a program built against
 * rdma-core's <rdma/rdma_cma.h> calls it: rdma_getaddrinfo's rules (as
 * rdma-core's addrinfo.c applies them), rdma_migrate_id, and a UD
 * (SIDR) connect that the listener rejects. Each case
 * prints "ok NAME" when it holds; the first that does not prints
 * "FAIL NAME: why" and exits 1.
 *
 * Build: cc -o cm_check cm_check.c -lrdmacm -libverbs
 * Run:   LD_LIBRARY_PATH=<dir with ernic's librdmacm.so.1> ./cm_check
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rdma-core 44's header predates it; the value is rdma_cma.h's. */
#ifndef RAI_SA
#define RAI_SA 0x00000010
#endif

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

static void getaddrinfo_rules(void)
{
	struct rdma_addrinfo hints, *res;
	struct sockaddr_in *sin, dst;

	current = "getaddrinfo";
	/* Passive, a service only: the source is the wildcard at that port. */
	memset(&hints, 0, sizeof hints);
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_family = AF_INET;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK(!rdma_getaddrinfo(NULL, "7471", &hints, &res), "passive");
	CHECK(res->ai_flags & RAI_PASSIVE, "flags %x", res->ai_flags);
	CHECK(res->ai_family == AF_INET, "family %d", res->ai_family);
	CHECK(res->ai_qp_type == IBV_QPT_RC, "qp type %d", res->ai_qp_type);
	CHECK(res->ai_port_space == RDMA_PS_TCP, "port space %d",
	      res->ai_port_space);
	CHECK(res->ai_src_addr && !res->ai_dst_addr, "addresses");
	sin = (struct sockaddr_in *)res->ai_src_addr;
	CHECK(res->ai_src_len == sizeof *sin && ntohs(sin->sin_port) == 7471 &&
		      sin->sin_addr.s_addr == htonl(INADDR_ANY),
	      "source");
	rdma_freeaddrinfo(res);

	/* Active, with a hinted source: both addresses. */
	memset(&hints, 0, sizeof hints);
	struct sockaddr_in src = {.sin_family = AF_INET,
				  .sin_port = htons(5000)};
	inet_pton(AF_INET, "127.0.0.1", &src.sin_addr);
	hints.ai_src_addr = (struct sockaddr *)&src;
	hints.ai_src_len = sizeof src;
	hints.ai_qp_type = IBV_QPT_UD;
	hints.ai_port_space = RDMA_PS_UDP;
	CHECK(!rdma_getaddrinfo("127.0.0.2", "6000", &hints, &res), "active");
	CHECK(!(res->ai_flags & RAI_PASSIVE), "flags %x", res->ai_flags);
	CHECK(res->ai_qp_type == IBV_QPT_UD &&
		      res->ai_port_space == RDMA_PS_UDP,
	      "qp type %d, port space %d", res->ai_qp_type,
	      res->ai_port_space);
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	CHECK(sin && ntohs(sin->sin_port) == 6000 &&
		      sin->sin_addr.s_addr == htonl(0x7f000002),
	      "destination");
	CHECK(res->ai_src_addr &&
		      !memcmp(res->ai_src_addr, &src, sizeof src),
	      "the hinted source");
	rdma_freeaddrinfo(res);

	/* Neither node nor service: the addresses come from the hints. */
	memset(&hints, 0, sizeof hints);
	dst = src;
	dst.sin_port = htons(6001);
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof dst;
	hints.ai_family = AF_INET;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK(!rdma_getaddrinfo(NULL, NULL, &hints, &res), "hints only");
	CHECK(res->ai_dst_addr && res->ai_dst_len == sizeof dst &&
		      !memcmp(res->ai_dst_addr, &dst, sizeof dst),
	      "the hinted destination");
	CHECK(!res->ai_src_addr, "no source");
	rdma_freeaddrinfo(res);

	/* Refusals. */
	errno = 0;
	CHECK(rdma_getaddrinfo(NULL, NULL, NULL, &res) && errno == EINVAL,
	      "nothing to resolve");
	memset(&hints, 0, sizeof hints);
	hints.ai_flags = RAI_SA;
	errno = 0;
	CHECK(rdma_getaddrinfo(NULL, "1", &hints, &res) && errno == EOPNOTSUPP,
	      "RAI_SA");
	hints.ai_flags = 0;
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = 4096;
	errno = 0;
	CHECK(rdma_getaddrinfo(NULL, NULL, &hints, &res) && errno == EINVAL,
	      "an address longer than any sockaddr");
	pass();
}

static int readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, 0) == 1;
}

static void migrate(void)
{
	struct rdma_event_channel *a, *b;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct sockaddr_in dst = {.sin_family = AF_INET,
				  .sin_port = htons(1)};

	current = "migrate_id";
	CHECK((a = rdma_create_event_channel()), "channel a");
	CHECK((b = rdma_create_event_channel()), "channel b");
	CHECK(!rdma_create_id(a, &id, NULL, RDMA_PS_TCP), "rdma_create_id");
	/* An event waits on a: it moves to b with the id. */
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000),
	      "rdma_resolve_addr");
	struct pollfd p = {.fd = a->fd, .events = POLLIN};
	CHECK(poll(&p, 1, 5000) == 1, "an event on a");
	CHECK(!rdma_migrate_id(id, b), "rdma_migrate_id to b");
	CHECK(id->channel == b, "id->channel");
	CHECK(!readable(a->fd), "a still readable");
	CHECK(readable(b->fd), "b not readable");
	CHECK(!rdma_get_cm_event(b, &ev), "the event on b");
	CHECK(ev->id == id && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED,
	      "event %d", ev->event);
	rdma_ack_cm_event(ev);
	/* NULL: synchronous, on a channel of its own. */
	CHECK(!rdma_migrate_id(id, NULL), "rdma_migrate_id to NULL");
	CHECK(id->channel && id->channel != a && id->channel != b,
	      "a channel of its own");
	CHECK(!rdma_destroy_id(id), "rdma_destroy_id");
	rdma_destroy_event_channel(a);
	rdma_destroy_event_channel(b);
	pass();
}

/* The next event on `ch`, which must be `type` (within 5 s). */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch,
				    enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};

	CHECK(poll(&p, 1, 5000) == 1, "no event (waiting for %s)",
	      rdma_event_str(type));
	CHECK(!rdma_get_cm_event(ch, &ev), "rdma_get_cm_event");
	CHECK(ev->event == type, "%s, not %s (status %d)",
	      rdma_event_str(ev->event), rdma_event_str(type), ev->status);
	return ev;
}

static void ud_reject(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listener, *client, *child;
	struct rdma_cm_event *ev;
	struct sockaddr_in at = {.sin_family = AF_INET,
				 .sin_port = htons(7609)};
	struct rdma_conn_param param = {.private_data = "hello",
					.private_data_len = 5};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 4,
					      .max_recv_wr = 4,
					      .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	current = "ud_reject";
	inet_pton(AF_INET, "127.0.0.1", &at.sin_addr);
	CHECK((ch = rdma_create_event_channel()), "channel");
	CHECK(!rdma_create_id(ch, &listener, NULL, RDMA_PS_UDP), "listener id");
	CHECK(!rdma_bind_addr(listener, (struct sockaddr *)&at), "bind");
	CHECK(!rdma_listen(listener, 4), "listen");
	CHECK(!rdma_create_id(ch, &client, NULL, RDMA_PS_UDP), "client id");
	CHECK(!rdma_resolve_addr(client, NULL, (struct sockaddr *)&at, 2000),
	      "rdma_resolve_addr");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	CHECK(!rdma_resolve_route(client, 2000), "rdma_resolve_route");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	CHECK((pd = ibv_alloc_pd(client->verbs)), "pd");
	CHECK((cq = ibv_create_cq(client->verbs, 8, NULL, NULL, 0)), "cq");
	qa.send_cq = qa.recv_cq = cq;
	CHECK(!rdma_create_qp(client, pd, &qa), "rdma_create_qp");
	CHECK(!rdma_connect(client, &param), "rdma_connect");

	/* The listener hears the request, with the client's private data. */
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(ev->listen_id == listener, "listen_id");
	child = ev->id;
	CHECK(ev->param.ud.private_data &&
		      !memcmp(ev->param.ud.private_data, "hello", 5),
	      "the request's private data");
	rdma_ack_cm_event(ev);
	CHECK(!rdma_reject(child, "busy", 4), "rdma_reject");
	CHECK(rdma_reject(child, NULL, 0) && errno == EINVAL,
	      "a second rdma_reject");

	/* As the kernel's rdma_cm tells it: UNREACHABLE, with the SIDR_REP's
	 * status (IB_SIDR_REJECT, 2) and private data. */
	ev = expect(ch, RDMA_CM_EVENT_UNREACHABLE);
	CHECK(ev->id == client, "the client's event");
	CHECK(ev->status == 2, "status %d", ev->status);
	CHECK(ev->param.ud.private_data &&
		      !memcmp(ev->param.ud.private_data, "busy", 4),
	      "the reply's private data");
	rdma_ack_cm_event(ev);

	rdma_destroy_qp(client);
	CHECK(!ibv_destroy_cq(cq), "destroy cq");
	CHECK(!ibv_dealloc_pd(pd), "dealloc pd");
	CHECK(!rdma_destroy_id(client), "destroy client");
	CHECK(!rdma_destroy_id(child), "destroy child");
	CHECK(!rdma_destroy_id(listener), "destroy listener");
	rdma_destroy_event_channel(ch);
	pass();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	getaddrinfo_rules();
	migrate();
	ud_reject();
	current = "done";
	pass();
	return 0;
}
