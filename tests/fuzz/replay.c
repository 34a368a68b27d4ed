/*
 * Replays committed fuzz inputs (seeds and fixed crashers) through a fuzz target's entry point,
 * so every ordinary test run, with gcc and the sanitizers, re-checks them without libFuzzer.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int main(int argc, char **argv);

static int replay_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	size_t off = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -1;
	}
	while (off < (size_t)st.st_size) {
		n = read(fd, buf + off, (size_t)st.st_size - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	LLVMFuzzerTestOneInput(buf, off);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *de;

		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) < 0)
				return 1;
			count++;
			continue;
		}
		d = opendir(argv[i]);
		if (!d)
			return 1;
		while ((de = readdir(d))) {
			char path[4096];
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (replay_file(path) < 0) {
				closedir(d);
				return 1;
			}
			count++;
		}
		closedir(d);
	}
	/* A replay that found nothing to replay is a broken test, not a pass. */
	if (count == 0) {
		fprintf(stderr, "no inputs found\n");
		return 1;
	}
	printf("1..1\nok 1 - replayed %d inputs\n", count);
	return 0;
}
