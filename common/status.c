// SPDX-License-Identifier: MIT
#include "status.h"

#include <sys/wait.h>

int status_exit_code(int wait_status)
{
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	if (WIFSIGNALED(wait_status))
		return 128 + WTERMSIG(wait_status);
	return 1;
}

int status_code_signal(int code)
{
	return code > 128 && code < 128 + 65 ? code - 128 : 0;
}
