// SPDX-License-Identifier: GPL-2.0
/*
 * ptyrun: run a command on a pseudo-terminal, copy its output to stdout and
 * to other files, and kill it after a deadline.
 *
 *   ptyrun SECONDS COPY-PATH[,COPY-PATH...] COMMAND [ARG...]
 *
 * (the guest's init copies a test's TAP to the results channel and to a
 * file it reads to decide on reruns).
 *
 * Why: the upstream cgroup kselftests fork and leave stdio fully buffered
 * when stdout is a pipe, so every child that exits flushes a copy of the
 * parent's pending output (test_kmem printed "not ok 1" 230 times).  On a
 * terminal stdio is line buffered, as under run_kselftest.sh's stdbuf, which
 * cannot help static binaries.
 *
 * Exit status: the command's, 128+N if killed by signal N, 124 on timeout
 * (like timeout(1)), 125 if ptyrun itself failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAX_COPIES 4

static void write_all(int fd, const char *buf, ssize_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += n;
		len -= n;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int master, copy[MAX_COPIES], ncopy = 0, status, timed_out = 0;
	struct termios tio;
	double deadline;
	char buf[4096];
	char *slave, *path, *paths;
	pid_t pid;
	int i;

	if (argc < 4) {
		fprintf(stderr, "usage: ptyrun SECONDS COPY-PATH[,COPY-PATH...] COMMAND [ARG...]\n");
		return 125;
	}
	deadline = now() + atof(argv[1]);
	paths = argv[2];
	while ((path = strsep(&paths, ","))) {
		if (ncopy == MAX_COPIES) {
			fprintf(stderr, "ptyrun: at most %d copies\n", MAX_COPIES);
			return 125;
		}
		copy[ncopy] = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY, 0644);
		if (copy[ncopy++] < 0) {
			perror(path);
			return 125;
		}
	}
	master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) || unlockpt(master) ||
	    !(slave = ptsname(master))) {
		perror("ptyrun: setup");
		return 125;
	}

	pid = fork();
	if (pid < 0) {
		perror("ptyrun: fork");
		return 125;
	}
	if (pid == 0) {
		int fd;

		setsid();
		fd = open(slave, O_RDWR);
		if (fd < 0) {
			perror("ptyrun: open slave");
			_exit(125);
		}
		/* Raw output: no "\n" -> "\r\n" translation in the logs. */
		if (!tcgetattr(fd, &tio)) {
			tio.c_oflag &= ~OPOST;
			tio.c_lflag &= ~ECHO;
			tcsetattr(fd, TCSANOW, &tio);
		}
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
		close(master);
		for (i = 0; i < ncopy; i++)
			close(copy[i]);
		execvp(argv[3], argv + 3);
		perror("ptyrun: exec");
		_exit(127);
	}

	for (;;) {
		struct pollfd p = { .fd = master, .events = POLLIN };
		double left = deadline - now();
		ssize_t n;
		int r;

		if (left <= 0 && !timed_out) {
			timed_out = 1;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
		}
		if (timed_out && left < -5)	/* a stray holder of the pty */
			break;
		r = poll(&p, 1, timed_out ? 1000 : (int)(left * 1000) + 1);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		n = read(master, buf, sizeof(buf));
		if (n <= 0)	/* EIO: every holder of the slave side is gone */
			break;
		write_all(1, buf, n);
		for (i = 0; i < ncopy; i++)
			write_all(copy[i], buf, n);
	}
	if (waitpid(pid, &status, 0) < 0)
		return 125;
	if (timed_out)
		return 124;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
