/* Internal: the pieces the two sandboxes (captures/sandbox.c, the capture
 * reader; candidates/plugin_sandbox.c, plugin kernels) share for running
 * work in a forked child under limits. Not part of the public API. */
#ifndef ADM_CHILD_H
#define ADM_CHILD_H

/* Sanitizer builds: a child's fault is its parent's to report, so the
 * child turns the sanitizer's death callback and report off. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define ADM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define ADM_SANITIZED 1
#endif
#endif
#ifdef ADM_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/* A limit from the environment, parsed by adm_env_i64 (core/env.c: the
 * variable's range, K/M/G for bytes); dflt when the variable is unset or
 * empty. The callers' entry points refuse an invalid value first
 * (adm_env_check), so dflt stands in for one only if the environment
 * changed in between. */
int64_t adm_child_env_limit(const char *name, int64_t dflt);

/* 0 when the variable is "0", "off" or "no"; 1 otherwise (unset included). */
int adm_child_env_on(const char *name);

/* The calling process's mapped address space in bytes (/proc/self/statm;
 * 0 where unreadable): what RLIMIT_AS budgets are added to. */
int64_t adm_child_mapped_bytes(void);

/* setrlimit, its failure ignored (a child does what it can). */
void adm_child_set_limit(int resource, rlim_t soft, rlim_t hard);

/* Marks both ends of pfd close-on-exec, flushes stdio (so that the child
 * does not write the parent's buffered output again) and forks. On
 * failure: -1 with errno from fork, both ends of pfd closed. */
pid_t adm_child_fork(int pfd[2]);

/* Forks and a thread's start-up work exclude each other. A child forked
 * while another thread is inside the dynamic loader (the CUDA module's
 * dlopen, libcublasLt's), the driver's initialisation or anything else
 * that holds a lock inherits that lock held, and waits on it forever: on
 * the H200, 2 of 30 replays of one capture saw the capture reader's child
 * fall silent reading the superblock until its 15 s limit, with the CUDA
 * warm-up thread (harness/cuda_warm.c) started just before the read.
 * adm_child_gate_forks (once, on the thread that will start such a
 * thread, before it starts it) makes every fork of the process wait for
 * the gate (pthread_atfork: the sandboxes' forks, the plugin sandbox's,
 * any library's); adm_child_hold_forks and adm_child_release_forks
 * bracket the work on its thread, whose own forks do not wait. */
void adm_child_gate_forks(void);
void adm_child_hold_forks(void);
void adm_child_release_forks(void);

/* fn runs once, in the parent, right after the next successful
 * adm_child_fork (the capture reader's, the drift reader's): a thread
 * that must not overlap a fork's start (adm_cuda_warm_start_after_fork)
 * starts there, while the child it would have endangered already runs.
 * NULL withdraws one not yet run; 1 when one was withdrawn. */
int adm_child_after_next_fork(void (*fn)(void));

/* Kills the child (SIGKILL) and reaps it; *wstatus is its wait status. */
void adm_child_reap(pid_t pid, int *wstatus);

#endif
