/*
 * skills.c: skills parsed from text and kept in a set (skills.h).  Every
 * input is the room's: a SKILL.md any member can write, a config line the
 * owner sends.  So lengths are checked before copying, names are checked
 * against a small alphabet, and a description goes on one line with its
 * control characters dropped (it lands in the system prompt).
 */
#include "skills.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "utf8.h"

#define SKILLS_FENCE	"---"	/* opens and closes front matter */

int
skills_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > SKILLS_MAX_NAME)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (name[i] <= ' ' || name[i] > '~')
			return 0;
	return 1;
}

/* One line of text from *p (before end) into line, without its newline
 * (and a \r before it); *p moves past it.  0, or -1 when too long. */
static int
skills_line(const char **p, const char *end, char *line, size_t linelen)
{
	const char *start = *p;
	const char *nl = memchr(start, '\n', (size_t)(end - start));
	size_t n = (size_t)((nl ? nl : end) - start);

	*p = nl ? nl + 1 : end;
	if (n && start[n - 1] == '\r')
		n--;
	if (n >= linelen)
		return -1;
	memcpy(line, start, n);
	line[n] = '\0';
	return (int)n;
}

/* The value of "key: value" in line when its key is key, trimmed and
 * unquoted, into out.  1 found, 0 not. */
static int
skills_field(const char *line, const char *key, char *out, size_t outlen)
{
	size_t k = strlen(key), n;
	const char *v;

	if (strncmp(line, key, k) != 0 || line[k] != ':')
		return 0;
	v = line + k + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
		v++;
		n -= 2;
	}
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, v, n);
	out[n] = '\0';
	return 1;
}

/* Read the front matter at the start of text, if any: name and desc
 * filled when present (else left ""), *body set past it (to text when
 * there is none). */
static void
skills_front_matter(const char *text, size_t len, char *name, size_t nlen,
    char *desc, size_t dlen, const char **body)
{
	const char *p = text, *end = text + len;
	char line[SKILLS_MAX_DESC + 64];
	int n;

	*body = text;
	name[0] = desc[0] = '\0';
	n = skills_line(&p, end, line, sizeof(line));
	if (n != 3 || strcmp(line, SKILLS_FENCE) != 0)
		return;
	while (p < end) {
		n = skills_line(&p, end, line, sizeof(line));
		if (n < 0)
			continue;	/* a line too long to be a field */
		if (strcmp(line, SKILLS_FENCE) == 0) {
			*body = p;
			return;
		}
		if (!skills_field(line, "name", name, nlen))
			skills_field(line, "description", desc, dlen);
	}
	name[0] = desc[0] = '\0';	/* never closed: not front matter */
}

/* desc cleaned for the system prompt: control characters dropped, line
 * breaks and tabs made spaces, at most SKILLS_MAX_DESC bytes. */
static char *
skills_clean_desc(const char *desc)
{
	char *s = utf8_clean_str(desc ? desc : "");

	if (!s)
		return NULL;
	for (char *q = s; *q; q++)
		if (*q == '\n' || *q == '\t' || *q == '\r')
			*q = ' ';
	if (strlen(s) > SKILLS_MAX_DESC)
		s[utf8_complete(s, SKILLS_MAX_DESC)] = '\0';
	return s;
}

json_object *
skills_parse(const char *text, size_t len, const char *fallback_name,
    const char *fallback_desc, const char *source, char *err, size_t errlen)
{
	char name[SKILLS_MAX_NAME + 2], fdesc[SKILLS_MAX_DESC + 1];
	const char *body;
	char *desc;
	json_object *s;

	if (len > SKILLS_MAX_BODY || !utf8_valid(text, len)) {
		snprintf(err, errlen, "its text is over %d bytes or not "
		    "UTF-8 text", SKILLS_MAX_BODY);
		return NULL;
	}
	skills_front_matter(text, len, name, sizeof(name), fdesc,
	    sizeof(fdesc), &body);
	if (!name[0] && fallback_name)
		snprintf(name, sizeof(name), "%s", fallback_name);
	if (!skills_name_valid(name)) {
		snprintf(err, errlen, "its name must be 1 to %d printable "
		    "ASCII characters without spaces", SKILLS_MAX_NAME);
		return NULL;
	}
	desc = skills_clean_desc(fdesc[0] ? fdesc : fallback_desc);
	if (!desc) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s = json_object_new_object();
	json_object_object_add(s, "name", json_object_new_string(name));
	json_object_object_add(s, "description", json_object_new_string(desc));
	json_object_object_add(s, "body", json_object_new_string_len(body,
	    (int)(text + len - body)));
	json_object_object_add(s, "source", json_object_new_string(source));
	free(desc);
	return s;
}

/* One config skill checked and parsed, or NULL with why in err. */
static json_object *
skills_config_one(json_object *e, size_t i, char *err, size_t errlen)
{
	json_object *body = NULL, *s;
	const char *name = json_get_string(e, "name");
	const char *desc = json_get_string(e, "description");
	char why[160];

	if (!json_object_is_type(e, json_type_object) ||
	    !json_object_object_get_ex(e, "body", &body) ||
	    !json_object_is_type(body, json_type_string)) {
		snprintf(err, errlen, "skills[%zu] must be an object with a "
		    "\"body\" string (and \"name\", \"description\")", i);
		return NULL;
	}
	s = skills_parse(json_object_get_string(body),
	    (size_t)json_object_get_string_len(body), name, desc, "config",
	    why, sizeof(why));
	if (!s)
		snprintf(err, errlen, "skills[%zu] is refused: %s", i, why);
	return s;
}

json_object *
skills_from_config(json_object *v, char *err, size_t errlen)
{
	json_object *set;
	size_t n;

	if (!json_object_is_type(v, json_type_array) ||
	    (n = json_object_array_length(v)) > SKILLS_MAX) {
		snprintf(err, errlen, "skills must be an array of at most %d "
		    "skills", SKILLS_MAX);
		return NULL;
	}
	set = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object *s = skills_config_one(
		    json_object_array_get_idx(v, i), i, err, errlen);

		if (!s) {
			json_object_put(set);
			return NULL;
		}
		if (!skills_add(set, s)) {
			snprintf(err, errlen, "skills[%zu] repeats the name of "
			    "an earlier skill", i);
			json_object_put(set);
			return NULL;
		}
	}
	return set;
}

json_object *
skills_find(json_object *set, const char *name)
{
	size_t n = set ? json_object_array_length(set) : 0;

	for (size_t i = 0; name && i < n; i++) {
		json_object *s = json_object_array_get_idx(set, i);
		const char *sn = json_get_string(s, "name");

		if (sn && strcmp(sn, name) == 0)
			return s;
	}
	return NULL;
}

int
skills_add(json_object *set, json_object *skill)
{
	if (json_object_array_length(set) >= SKILLS_MAX ||
	    skills_find(set, json_get_string(skill, "name"))) {
		json_object_put(skill);
		return 0;
	}
	json_object_array_add(set, skill);
	return 1;
}
