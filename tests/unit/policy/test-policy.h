/* Shared helpers of the policy unit tests (one binary, several files). */
#ifndef TEST_POLICY_H
#define TEST_POLICY_H

#include <stddef.h>

#include "hezo-json.h"
#include "hezo-policy.h"

struct CMUnitTest;

const char *test_source_root(void);
/* tests/data/NAME parsed; the captures other modules record from real engines. */
struct hezo_json *load_data(const char *name);
/* A config.json with the five namespaces and nothing else. */
struct hezo_json *minimal_spec(void);
char *make_tempdir(void);
void remove_tree(const char *dir);
void write_file(const char *path, const char *text);
void write_file_at(const char *dir, const char *name, const char *text);

struct hezo_policy *parse_ok(const char *json);
char *json_text(const struct hezo_json *v);
char *policy_value(const struct hezo_policy *p, const char *path);
void assert_value(const struct hezo_policy *p, const char *path, const char *want);

extern const struct CMUnitTest policy_parse_tests[];
extern const size_t policy_parse_ntests;
extern const struct CMUnitTest policy_apply_tests[];
extern const size_t policy_apply_ntests;
extern const struct CMUnitTest policy_mounts_tests[];
extern const size_t policy_mounts_ntests;
extern const struct CMUnitTest policy_rlimits_tests[];
extern const size_t policy_rlimits_ntests;
extern const struct CMUnitTest policy_flags_tests[];
extern const size_t policy_flags_ntests;
extern const struct CMUnitTest policy_secrets_tests[];
extern const size_t policy_secrets_ntests;

#endif
