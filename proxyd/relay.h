/* The TCP relay's internals shared by relay.c (accept, verdict, connect), relay-copy.c (moving
 * bytes both ways) and relay-http.c (following plain HTTP). */
#ifndef HEZO_PROXYD_RELAY_H
#define HEZO_PROXYD_RELAY_H

#include "proxyd.h"

#define PUMP_ROUNDS 8
/* Pipes are grown to this (when the pipe quota allows) so one splice() moves a whole socket
 * queue: fewer system calls per byte on bulk transfers. Pages are only held while bytes are. */
#define PIPE_SIZE    (256 * 1024)
#define PIPE_DEFAULT (64 * 1024)
/* Spare head buffers and pipes kept for the next connection instead of freed and re-created. */
#define HEAD_POOL 16
#define PIPE_POOL 64

enum conn_state { ST_HEAD, ST_CONNECTING, ST_RELAY };

/*
 * Where a plain-HTTP connection's client stream is. H_NONE: not followed (TLS, an address
 * entry): bytes pass as they come. H_FOLLOW: every request is judged before it goes; h.t says
 * what the next bytes are. H_OPAQUE: the server switched protocols (101): bytes pass as they come.
 */
enum http_state {
	H_NONE,
	H_FOLLOW,
	H_OPAQUE,
	H_REFUSED, /* a request was refused: answered (h.status) once the earlier responses are out
		    */
};

/*
 * One direction of a relay. Bytes leave in order: first buf (the request head proxyd read, or a
 * copy buffer when no pipe can be had), then the pipe. Both are borrowed from pools only while
 * they hold bytes, so an idle relay holds its two sockets and nothing else.
 */
struct dir {
	int pipe[2];
	uint32_t pipe_cap;
	bool pipe_full, eof, shut; /* packed with pipe_cap: a relay is mostly these structs */
	size_t inpipe;
	uint8_t *buf; /* PD_HEAD_MAX bytes when set */
	size_t off, len;
	uint64_t bytes;
};

struct pd_conn {
	struct pd_conn *next, **pprev;
	struct pd_container *c;
	struct pd_watch cw, uw;
	enum conn_state st;
	/* A side whose peer already reset it: no SO_LINGER needed there. */
	bool c_dead, u_dead;
	struct pd_tcp t;
	const char *reason;
	uint64_t deadline_ms, last_ms;
	uint64_t connect_us; /* when connect() was called (pd_connect_hist) */
	struct dir up, down;
	struct {
		uint8_t st;	     /* enum http_state */
		uint16_t status;     /* H_REFUSED: the answer's status, 400 or 403 */
		uint32_t nreq;	     /* requests passed */
		size_t ok;	     /* H_FOLLOW: bytes at the front of up.buf checked to go */
		uint64_t refused_ms; /* H_REFUSED: when it happened */
		struct hezo_http_track t;
	} h;
};

/* relay-copy.c */
extern unsigned relay_nactive;
uint8_t *relay_head_get(void);
void relay_dir_release(struct dir *d);
void relay_conn_end(struct pd_conn *k, const char *verdict, const char *reason, bool rst);
int relay_pump(struct pd_conn *k, struct dir *d, int src, int dst, bool readable, bool *src_failed,
	       bool *dst_failed);
void relay_run(struct pd_conn *k, uint32_t cev, uint32_t uev);
void relay_start(struct pd_conn *k);

/* relay-http.c */
bool relay_http_followed(const struct pd_conn *k, const struct dir *d);
size_t relay_dir_sendable(const struct pd_conn *k, const struct dir *d);
bool relay_conn_has_data(const struct pd_conn *k, const struct dir *d);
const char *relay_conn_verdict(const struct pd_conn *k);
void relay_http_advance(struct pd_conn *k);
/* An Upgrade request went: the client's next bytes wait until the answer is seen. */
bool relay_http_holding(const struct pd_conn *k);
/* The refusal's answer to the client (400 or 403). */
void relay_http_answer(struct pd_conn *k);
void relay_http_upgrade_answer(struct pd_conn *k);
/* How the client's next bytes may be read: 0 not now, 1 into the pipe (at most *max), 2 into
 * the buffer to be checked. */
int relay_http_fill_mode(const struct pd_conn *k, uint64_t *max);
void relay_http_body_passed(struct pd_conn *k, uint64_t n);
void relay_http_read(struct pd_conn *k, ssize_t n);

#endif
