/* placeholder: written by the striped-file/config work (issue 4) */
typedef int drx_placeholder_log_;
