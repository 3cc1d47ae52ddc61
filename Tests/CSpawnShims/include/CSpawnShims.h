// glibc's GNU extensions for starting the tests' child processes, which Swift's Glibc module
// does not show (they need _GNU_SOURCE).
#pragma once
#include <spawn.h>

// pipe2(fds, O_CLOEXEC): both ends close in every child, atomically.
int cspawn_pipe_cloexec(int fds[2]);
// posix_spawn_file_actions_addclosefrom_np: the child closes every descriptor from `from` on.
int cspawn_add_closefrom(posix_spawn_file_actions_t *actions, int from);
// posix_spawn_file_actions_addchdir_np: the child starts in `path`.
int cspawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path);
