/*
 * The opening every verb shares (crun's verbs have one too): the verb's flags parsed by its table,
 * --help handed to the backend, the container ID taken and checked by the verb's rule.
 */
#include <errno.h>
#include <string.h>

#include "shim.h"

int shim_verb_open(const char *name, int argc, char **argv, unsigned rules, struct shim_verb *v,
		   struct hezo_error **err)
{
	int r;

	memset(v, 0, sizeof(*v));
	v->name = name;
	v->argc = argc;
	v->argv = argv;
	r = shim_parse_args(shim_verb_spec(name), argc, argv, &v->args, err);
	if (r < 0)
		return r;
	v->id = v->args.help ? NULL : shim_args_positional(&v->args, 0);
	if (v->args.help && (rules & SHIM_VERB_HELP_PASSES))
		return 1;
	/* Nothing to act on: the backend prints its usage error. */
	if (v->args.npos == 0 && (rules & SHIM_VERB_NO_ID_PASSES))
		return 1;
	if ((rules & SHIM_VERB_ONE_ID) && v->args.npos != 1)
		return hezo_error_set(err, EINVAL, "%s: expected exactly one container ID, got %zu",
				      name, v->args.npos);
	if (rules & SHIM_VERB_ID)
		r = shim_validate_id(v->id, err);
	/*
	 * create, run and exec: nothing of the caller's is handed on by descriptor, and stdio is
	 * nothing that must not reach the box in any mode; what may be handed as it is depends on
	 * the backend and the terminal, checked by the verb (shim_stdio_handed).
	 */
	r = r ?: shim_check_preserved_fds(&v->args, err);
	if (r == 0 && (rules & SHIM_VERB_STDIO))
		r = shim_check_stdio(false, true, err);
	return r;
}

void shim_verb_done(struct shim_verb *v)
{
	shim_args_done(&v->args);
}
