/* SPDX-License-Identifier: MIT */
/* The page's style and script (src/audit/html/), embedded at build time by
 * html/embed.c; each array ends in a NUL not counted in its length. */
#pragma once

#include <stddef.h>

extern const char rp_html_css[];
extern const size_t rp_html_css_len;
extern const char rp_html_js[];
extern const size_t rp_html_js_len;
