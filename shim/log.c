/*
 * The shim's error reporting: one line per message, one write() to an O_APPEND fd, so
 * containerd (which shows the last line of --log) prints our reason for a refused container.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hezo-file.h"
#include "hezo-log.h"
#include "shim.h"

size_t shim_log_line(char *buf, size_t size, enum shim_log_format fmt, const char *level,
		     const char *msg, const struct timespec *when)
{
	char full[3072];

	snprintf(full, sizeof(full), "hezo-shim: %s", msg ? msg : "");
	if (fmt == SHIM_LOG_JSON)
		return hezo_log_format_json(buf, size, level, full, when);
	/* runc's text format quotes msg, so escape it the way a quoted string needs */
	char esc[4096];
	hezo_json_escape(esc, sizeof(esc), full);
	return hezo_log_format_text(buf, size, level, esc, when);
}

bool shim_debug(const struct shim_ctx *ctx)
{
	bool b = false;

	return ctx->g.debug && shim_parse_bool(ctx->g.debug, &b) == 0 && b;
}

static void vlog(struct shim_ctx *ctx, const char *level, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void vlog(struct shim_ctx *ctx, const char *level, const char *fmt, va_list ap)
{
	char msg[2048], line[4096];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (ctx->g.log && *ctx->g.log) {
		if (ctx->log_fd < 0)
			ctx->log_fd =
				open(ctx->g.log,
				     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
		if (ctx->log_fd >= 0) {
			n = shim_log_line(line, sizeof(line), ctx->g.log_fmt, level, msg, NULL);
			if (n > 0 && hezo_write_all(ctx->log_fd, line, n) == 0)
				return;
		}
		/* The log is unusable: stderr is the last place the reason can go. */
	}
	if (strcmp(level, "error") != 0)
		return;
	n = (size_t)snprintf(line, sizeof(line), "hezo-shim: %s\n", msg);
	if (n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	(void)hezo_write_all(STDERR_FILENO, line, n);
}

void shim_log(struct shim_ctx *ctx, const char *level, const char *fmt, ...)
{
	va_list ap;

	if (strcmp(level, "debug") == 0 && (!shim_debug(ctx) || !ctx->g.log))
		return;
	va_start(ap, fmt);
	vlog(ctx, level, fmt, ap);
	va_end(ap);
}

void shim_note_project(struct shim_ctx *ctx, const struct hezo_policy *p)
{
	const char *name = hezo_policy_project(p);

	ctx->project_file[0] = '\0';
	if (name && snprintf(ctx->project_file, sizeof(ctx->project_file), "%s/%s.json",
			     hezo_policy_projects_dir(p), name) >= (int)sizeof(ctx->project_file))
		ctx->project_file[0] = '\0';
}

int shim_report(struct shim_ctx *ctx, const struct hezo_error *err)
{
	const char *msg = err && err->msg ? err->msg : "unknown error";
	_cleanup_free_ char *keyed = NULL;
	char line[4096];
	int n;

	/* A refusal by a policy key names the key and the files its value came from. */
	if (err && err->msg && err->key &&
	    asprintf(&keyed, "%s (%s in %s%s%s)", err->msg, err->key, ctx->policy_path,
		     ctx->project_file[0] ? " and " : "", ctx->project_file) >= 0)
		msg = keyed;

	shim_log(ctx, "error", "%s", msg);
	if (!ctx->fail_stderr || !ctx->g.log || !*ctx->g.log)
		return 1; /* shim_log wrote it to stderr already, or only --log was wanted */
	n = snprintf(line, sizeof(line), "hezo-shim: %s\n", msg);
	if (n > 0)
		(void)hezo_write_all(STDERR_FILENO, line,
				     (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	return 1;
}
