/*
 * oplogfs: a passthrough FUSE file system that logs every operation in the JuiceFS access-log format.
 *
 *     oplogfs SOURCE MOUNTPOINT [-o fuse-options]
 *
 * Everything under MOUNTPOINT is SOURCE; each operation becomes one line on standard output, as
 * `juicefs` writes its .accesslog (v1.2 form, parsed by backend/app/traces/juicefs_log.py):
 *
 *     2026.11.22 06:30:24.123456 [uid:0,gid:0,pid:11784] write (1835011,16384,49152,3) - OK <0.000021>
 *
 * Entry calls name (parent,name,...) as JuiceFS does: create (parent,name,mode), mkdir (parent,name,mode),
 * unlink/rmdir (parent,name). The time is when the operation ended (UTC); pid is the kernel thread id of the caller, so every line
 * lands on the lane of the thread that asked for it. Inodes are the source files' own inode numbers
 * (use_ino), so the reader maps them to paths by looking at SOURCE.
 *
 * Choices that matter for what the log shows and what it costs:
 * - direct_io on every file: each read and write of the application reaches us with its own offset and
 *   size (no page cache in between, which would merge, split or hide them); max_write 1 MiB so a 16 KiB
 *   InnoDB page or a doublewrite batch arrives in one piece.
 * - O_DIRECT is dropped when opening the source file: FUSE hands us buffers that are not aligned for it.
 *   Durability is unchanged, since fsync and fdatasync are passed through.
 * - Lines go to a 256 KiB buffer, written out when full and every 100 ms: one write(2) per batch instead
 *   of one per operation. A slow reader blocks the writer (a pipe): memory stays bounded.
 * - flush (called at every close) is a no-op here and not logged, so close() shows as "release".
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LOG_BUFFER_BYTES (256 * 1024)
#define LOG_LINE_MAX 1024
#define FLUSH_INTERVAL_NS 100000000L

static int source_fd = -1;

/* ---- the log -------------------------------------------------------------------------------- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_buffer[LOG_BUFFER_BYTES];
static size_t log_used;
static int log_broken; /* the reader went away: keep serving files, stop logging */
static volatile int flusher_running = 1;

static void write_out_locked(void)
{
	size_t done = 0;
	while (done < log_used && !log_broken) {
		ssize_t n = write(STDOUT_FILENO, log_buffer + done, log_used - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_broken = 1;
			break;
		}
		done += (size_t)n;
	}
	log_used = 0;
}

static void *flusher(void *unused)
{
	(void)unused;
	struct timespec pause = {0, FLUSH_INTERVAL_NS};
	while (flusher_running) {
		nanosleep(&pause, NULL);
		pthread_mutex_lock(&log_lock);
		write_out_locked();
		pthread_mutex_unlock(&log_lock);
	}
	return NULL;
}

static void now(struct timespec *t)
{
	clock_gettime(CLOCK_REALTIME, t);
}

static double seconds_between(const struct timespec *start, const struct timespec *end)
{
	return (double)(end->tv_sec - start->tv_sec) + (double)(end->tv_nsec - start->tv_nsec) / 1e9;
}

/* "OK", or the errno text as Go prints it: glibc's strerror in lower case. */
static void status_text(int result, char *out, size_t size)
{
	if (result >= 0) {
		snprintf(out, size, "OK");
		return;
	}
	char message[128];
	snprintf(message, sizeof message, "%s", strerror(-result));
	for (char *c = message; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	snprintf(out, size, "%s", message);
}

/*
 * One line: `<end time> [uid:U,gid:G,pid:TID] <call text> - <status> <duration>`. `call` is printf-style,
 * e.g. "write (%lu,%zu,%ld,%lu)"; `result` is 0 or more for success, -errno for a failure.
 */
__attribute__((format(printf, 3, 4))) static void log_op(const struct timespec *start, int result, const char *call, ...)
{
	struct timespec end;
	now(&end);
	struct tm utc;
	gmtime_r(&end.tv_sec, &utc);
	struct fuse_context *context = fuse_get_context();
	char status[160];
	status_text(result, status, sizeof status);

	char line[LOG_LINE_MAX];
	int used = snprintf(line, sizeof line, "%04d.%02d.%02d %02d:%02d:%02d.%06ld [uid:%u,gid:%u,pid:%d] ",
			    utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
			    end.tv_nsec / 1000, (unsigned)context->uid, (unsigned)context->gid, (int)context->pid);
	va_list args;
	va_start(args, call);
	used += vsnprintf(line + used, sizeof line - (size_t)used, call, args);
	va_end(args);
	if (used >= (int)sizeof line - 64)
		used = (int)sizeof line - 64; /* an absurdly long name: keep the line well-formed */
	used += snprintf(line + used, sizeof line - (size_t)used, " - %s <%.6f>\n", status,
			 seconds_between(start, &end));

	pthread_mutex_lock(&log_lock);
	if (log_used + (size_t)used > sizeof log_buffer)
		write_out_locked();
	memcpy(log_buffer + log_used, line, (size_t)used);
	log_used += (size_t)used;
	pthread_mutex_unlock(&log_lock);
}

/* ---- paths and inodes ----------------------------------------------------------------------- */

/* FUSE paths start with "/"; relative to source_fd, the root is ".". */
static const char *relative(const char *path)
{
	return path[1] ? path + 1 : ".";
}

static unsigned long inode_of_path(const char *path)
{
	struct stat st;
	return fstatat(source_fd, relative(path), &st, AT_SYMLINK_NOFOLLOW) == 0 ? (unsigned long)st.st_ino : 0;
}

/* The inode of the directory holding path, and the entry's name, as JuiceFS logs (parent,name). */
static unsigned long parent_inode(const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	*name = slash ? slash + 1 : path;
	char parent[PATH_MAX];
	size_t length = slash && slash != path ? (size_t)(slash - path) : 1;
	if (length >= sizeof parent)
		return 0;
	memcpy(parent, path, length);
	parent[length] = '\0';
	return inode_of_path(parent);
}

struct open_file {
	int fd;
	unsigned long ino;
};

static struct open_file *file_of(struct fuse_file_info *fi)
{
	return (struct open_file *)(uintptr_t)fi->fh;
}

/* ---- operations ----------------------------------------------------------------------------- */

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1;
	cfg->direct_io = 1;
	/* The source can change only through us: let the kernel cache attributes and names. */
	cfg->entry_timeout = 1.0;
	cfg->attr_timeout = 1.0;
	cfg->negative_timeout = 0;
	conn->max_write = 1024 * 1024;
	return NULL;
}

static void op_destroy(void *private_data)
{
	(void)private_data;
	pthread_mutex_lock(&log_lock);
	write_out_locked();
	pthread_mutex_unlock(&log_lock);
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	int result = fi ? fstat(file_of(fi)->fd, st) : fstatat(source_fd, relative(path), st, AT_SYMLINK_NOFOLLOW);
	return result == 0 ? 0 : -errno;
}

static int op_access(const char *path, int mask)
{
	return faccessat(source_fd, relative(path), mask, 0) == 0 ? 0 : -errno;
}

static int op_readlink(const char *path, char *buffer, size_t size)
{
	ssize_t n = readlinkat(source_fd, relative(path), buffer, size - 1);
	if (n < 0)
		return -errno;
	buffer[n] = '\0';
	return 0;
}

static int op_readdir(const char *path, void *buffer, fuse_fill_dir_t fill, off_t offset, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	(void)offset, (void)fi, (void)flags;
	struct timespec start;
	now(&start);
	int fd = openat(source_fd, relative(path), O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -errno;
	DIR *dir = fdopendir(fd);
	if (dir == NULL) {
		int error = errno;
		close(fd);
		return -error;
	}
	struct dirent *entry;
	while ((entry = readdir(dir)) != NULL) {
		struct stat st = {.st_ino = entry->d_ino, .st_mode = (mode_t)entry->d_type << 12};
		if (fill(buffer, entry->d_name, &st, 0, 0))
			break;
	}
	closedir(dir);
	log_op(&start, 0, "readdir (%lu,0,0)", inode_of_path(path));
	return 0;
}

static int op_mkdir(const char *path, mode_t mode)
{
	struct timespec start;
	now(&start);
	int result = mkdirat(source_fd, relative(path), mode) == 0 ? 0 : -errno;
	const char *name;
	unsigned long parent = parent_inode(path, &name);
	log_op(&start, result, "mkdir (%lu,%s,0%o)", parent, name, (unsigned)mode);
	return result;
}

static int op_unlink(const char *path)
{
	struct timespec start;
	now(&start);
	const char *name;
	unsigned long parent = parent_inode(path, &name);
	int result = unlinkat(source_fd, relative(path), 0) == 0 ? 0 : -errno;
	log_op(&start, result, "unlink (%lu,%s)", parent, name);
	return result;
}

static int op_rmdir(const char *path)
{
	struct timespec start;
	now(&start);
	const char *name;
	unsigned long parent = parent_inode(path, &name);
	int result = unlinkat(source_fd, relative(path), AT_REMOVEDIR) == 0 ? 0 : -errno;
	log_op(&start, result, "rmdir (%lu,%s)", parent, name);
	return result;
}

static int op_symlink(const char *target, const char *path)
{
	return symlinkat(target, source_fd, relative(path)) == 0 ? 0 : -errno;
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	struct timespec start;
	now(&start);
	const char *old_name, *new_name;
	unsigned long old_parent = parent_inode(from, &old_name), new_parent = parent_inode(to, &new_name);
	int result = renameat2(source_fd, relative(from), source_fd, relative(to), flags) == 0 ? 0 : -errno;
	log_op(&start, result, "rename (%lu,%s,%lu,%s,%u)", old_parent, old_name, new_parent, new_name, flags);
	return result;
}

static int op_link(const char *from, const char *to)
{
	return linkat(source_fd, relative(from), source_fd, relative(to), 0) == 0 ? 0 : -errno;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int result = fi ? fchmod(file_of(fi)->fd, mode) : fchmodat(source_fd, relative(path), mode, 0);
	return result == 0 ? 0 : -errno;
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	int result = fi ? fchown(file_of(fi)->fd, uid, gid)
			: fchownat(source_fd, relative(path), uid, gid, AT_SYMLINK_NOFOLLOW);
	return result == 0 ? 0 : -errno;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct timespec start;
	now(&start);
	int result;
	unsigned long ino;
	if (fi) {
		result = ftruncate(file_of(fi)->fd, size) == 0 ? 0 : -errno;
		ino = file_of(fi)->ino;
	} else {
		int fd = openat(source_fd, relative(path), O_WRONLY);
		result = fd >= 0 && ftruncate(fd, size) == 0 ? 0 : -errno;
		if (fd >= 0)
			close(fd);
		ino = inode_of_path(path);
	}
	log_op(&start, result, "truncate (%lu,%ld)", ino, (long)size);
	return result;
}

static int op_utimens(const char *path, const struct timespec times[2], struct fuse_file_info *fi)
{
	int result = fi ? futimens(file_of(fi)->fd, times)
			: utimensat(source_fd, relative(path), times, AT_SYMLINK_NOFOLLOW);
	return result == 0 ? 0 : -errno;
}

static int open_source(const char *path, int flags, mode_t mode, struct fuse_file_info *fi)
{
	/* See the header: the buffers FUSE gives us are not aligned for O_DIRECT. */
	int fd = openat(source_fd, relative(path), flags & ~O_DIRECT, mode);
	if (fd < 0)
		return -errno;
	struct open_file *file = malloc(sizeof *file);
	struct stat st;
	if (file == NULL || fstat(fd, &st) != 0) {
		free(file);
		close(fd);
		return -ENOMEM;
	}
	file->fd = fd;
	file->ino = (unsigned long)st.st_ino;
	fi->fh = (uint64_t)(uintptr_t)file;
	fi->direct_io = 1;
	return 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct timespec start;
	now(&start);
	int result = open_source(path, fi->flags | O_CREAT, mode, fi);
	const char *name;
	unsigned long parent = parent_inode(path, &name);
	if (result == 0)
		log_op(&start, 0, "create (%lu,%s,0%o): (%lu,[]) [fh:%d]", parent, name, (unsigned)mode,
		       file_of(fi)->ino, file_of(fi)->fd);
	else
		log_op(&start, result, "create (%lu,%s,0%o)", parent, name, (unsigned)mode);
	return result;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct timespec start;
	now(&start);
	int result = open_source(path, fi->flags, 0, fi);
	if (result == 0)
		log_op(&start, 0, "open (%lu,0x%x) [fh:%d]", file_of(fi)->ino, (unsigned)fi->flags, file_of(fi)->fd);
	else
		log_op(&start, result, "open (%lu,0x%x)", inode_of_path(path), (unsigned)fi->flags);
	return result;
}

static int op_read(const char *path, char *buffer, size_t size, off_t offset, struct fuse_file_info *fi)
{
	(void)path;
	struct timespec start;
	now(&start);
	struct open_file *file = file_of(fi);
	ssize_t n = pread(file->fd, buffer, size, offset);
	int result = n < 0 ? -errno : (int)n;
	if (n >= 0)
		log_op(&start, 0, "read (%lu,%zu,%ld,%d): (%zd)", file->ino, size, (long)offset, file->fd, n);
	else
		log_op(&start, result, "read (%lu,%zu,%ld,%d)", file->ino, size, (long)offset, file->fd);
	return result;
}

static int op_write(const char *path, const char *buffer, size_t size, off_t offset, struct fuse_file_info *fi)
{
	(void)path;
	struct timespec start;
	now(&start);
	struct open_file *file = file_of(fi);
	ssize_t n = pwrite(file->fd, buffer, size, offset);
	int result = n < 0 ? -errno : (int)n;
	log_op(&start, result < 0 ? result : 0, "write (%lu,%zu,%ld,%d)", file->ino, size, (long)offset, file->fd);
	return result;
}

static int op_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	return fstatvfs(source_fd, st) == 0 ? 0 : -errno;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	struct timespec start;
	now(&start);
	struct open_file *file = file_of(fi);
	int result = close(file->fd) == 0 ? 0 : -errno;
	log_op(&start, result, "release (%lu,%d)", file->ino, file->fd);
	free(file);
	return 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	struct timespec start;
	now(&start);
	struct open_file *file = file_of(fi);
	int result = (datasync ? fdatasync(file->fd) : fsync(file->fd)) == 0 ? 0 : -errno;
	log_op(&start, result, "fsync (%lu,%d,%d)", file->ino, datasync, file->fd);
	return result;
}

static int op_fallocate(const char *path, int mode, off_t offset, off_t length, struct fuse_file_info *fi)
{
	(void)path;
	struct timespec start;
	now(&start);
	struct open_file *file = file_of(fi);
	int result = fallocate(file->fd, mode, offset, length) == 0 ? 0 : -errno;
	log_op(&start, result, "fallocate (%lu,%d,%ld,%ld)", file->ino, mode, (long)offset, (long)length);
	return result;
}

static int op_flock(const char *path, struct fuse_file_info *fi, int op)
{
	(void)path;
	return flock(file_of(fi)->fd, op) == 0 ? 0 : -errno;
}

static off_t op_lseek(const char *path, off_t offset, int whence, struct fuse_file_info *fi)
{
	(void)path;
	off_t result = lseek(file_of(fi)->fd, offset, whence);
	return result < 0 ? -errno : result;
}

static const struct fuse_operations operations = {
	.init = op_init,
	.destroy = op_destroy,
	.getattr = op_getattr,
	.access = op_access,
	.readlink = op_readlink,
	.readdir = op_readdir,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.chmod = op_chmod,
	.chown = op_chown,
	.truncate = op_truncate,
	.utimens = op_utimens,
	.create = op_create,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.statfs = op_statfs,
	.release = op_release,
	.fsync = op_fsync,
	.fallocate = op_fallocate,
	.flock = op_flock,
	.lseek = op_lseek,
};

int main(int argc, char *argv[])
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SOURCE MOUNTPOINT [-o fuse-options]\n", argv[0]);
		return 2;
	}
	source_fd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (source_fd < 0) {
		fprintf(stderr, "oplogfs: cannot open the source directory %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	/* A reader that goes away must not kill the file system under the server: writes just fail. */
	signal(SIGPIPE, SIG_IGN);
	umask(0);
	pthread_t flush_thread;
	pthread_create(&flush_thread, NULL, flusher, NULL);

	/* fuse_main gets: program, mountpoint, foreground, the caller's other options. */
	char **fuse_argv = calloc((size_t)argc + 1, sizeof *fuse_argv);
	if (fuse_argv == NULL)
		return 1;
	int fuse_argc = 0;
	fuse_argv[fuse_argc++] = argv[0];
	fuse_argv[fuse_argc++] = argv[2];
	fuse_argv[fuse_argc++] = "-f";
	for (int i = 3; i < argc; i++)
		fuse_argv[fuse_argc++] = argv[i];
	int status = fuse_main(fuse_argc, fuse_argv, &operations, NULL);

	flusher_running = 0;
	pthread_join(flush_thread, NULL);
	pthread_mutex_lock(&log_lock);
	write_out_locked();
	pthread_mutex_unlock(&log_lock);
	free(fuse_argv);
	return status;
}
