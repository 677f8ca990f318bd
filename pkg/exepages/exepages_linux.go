package exepages

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func release() (Released, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return Released{}, err
	}
	// The executable is the file whose mapping holds this function's code.
	ranges, err := readOnlyMappings(maps, uintptr(reflect.ValueOf(release).Pointer()))
	if err != nil {
		return Released{}, err
	}
	// /proc/self/exe opens the executable even where its path was
	// replaced or removed since it started.
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		return Released{}, fmt.Errorf("open the executable: %w", err)
	}
	defer exe.Close()
	// Dirty pages are never paged out: those of an executable linked
	// moments ago (a development build) must reach the disk first. fsync
	// works on a descriptor opened to read.
	if err := exe.Sync(); err != nil {
		return Released{}, fmt.Errorf("sync the executable: %w", err)
	}
	return pageOut(exe, ranges, true)
}

func releaseFile(path string) (Released, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return Released{}, err
	}
	// maps shows the path the kernel resolved.
	if path, err = filepath.EvalSymlinks(path); err != nil {
		return Released{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Released{}, err
	}
	defer f.Close()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return Released{}, err
	}
	ranges, err := pathMappings(maps, path)
	if err != nil {
		return Released{}, err
	}
	return pageOut(f, ranges, false)
}

// pageOut pages out ranges, mappings of f, and drops f's cached pages that
// no process maps; random also turns off read-ahead on the ranges.
func pageOut(f *os.File, ranges []mapping, random bool) (Released, error) {
	var r Released
	var err error
	if r.ResidentBefore, err = residentFile(); err != nil {
		return r, err
	}
	for _, m := range ranges {
		if random {
			if err := madvise(m, unix.MADV_RANDOM); err != nil {
				return r, err
			}
		}
		if err := madvise(m, unix.MADV_PAGEOUT); err != nil {
			if errors.Is(err, unix.EINVAL) {
				if random {
					_ = madvise(m, unix.MADV_NORMAL)
				}
				return r, fmt.Errorf("%w: %v", ErrUnsupported, err)
			}
			return r, err
		}
		r.Mapped += int64(m.end - m.start)
	}
	// Pages of the file no process maps stay in the page cache, and the
	// kernel maps up to 64 KiB of cached pages around each page faulted
	// in: drop them too, so that a fault brings back its own page only.
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return r, fmt.Errorf("drop the cached pages of %s: %w", f.Name(), err)
	}
	r.ResidentAfter, err = residentFile()
	return r, err
}

// mapping is an address range [start, end).
type mapping struct{ start, end uintptr }

// mapped is one line of /proc/self/maps.
type mapped struct {
	mapping
	perms string
	file  string // device and inode
	path  string
}

func (m mapped) readOnly() bool {
	return strings.HasPrefix(m.perms, "r") && !strings.Contains(m.perms, "w")
}

// parseMaps parses /proc/self/maps.
func parseMaps(maps []byte) ([]mapped, error) {
	var all []mapped
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// address perms offset dev inode [pathname]
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err := errors.Join(err1, err2); err != nil || end <= start {
			return nil, fmt.Errorf("read mapping %q: %v", f[0], err)
		}
		m := mapped{mapping: mapping{uintptr(start), uintptr(end)}, perms: f[1], file: f[3] + " " + f[4]}
		if len(f) > 5 {
			m.path = strings.Join(f[5:], " ")
		}
		all = append(all, m)
	}
	return all, sc.Err()
}

// readOnlyMappings returns the readable, not writable mappings of
// /proc/self/maps (maps) of the file whose mapping holds the address pc.
// Files are told apart by device and inode, as maps shows them (on
// overlayfs, those of the file below, which stat does not give).
func readOnlyMappings(maps []byte, pc uintptr) ([]mapping, error) {
	all, err := parseMaps(maps)
	if err != nil {
		return nil, err
	}
	file := ""
	for _, m := range all {
		if m.start <= pc && pc < m.end {
			file = m.file
		}
	}
	if file == "" || strings.HasSuffix(file, " 0") {
		return nil, fmt.Errorf("no file mapping holds address %#x", pc)
	}
	var out []mapping
	for _, m := range all {
		if m.file == file && m.readOnly() {
			out = append(out, m.mapping)
		}
	}
	return out, nil
}

// pathMappings returns the readable, not writable mappings of maps of the
// file at path (absolute, without symbolic links), not those of a file
// that was there before and was replaced or removed.
func pathMappings(maps []byte, path string) ([]mapping, error) {
	all, err := parseMaps(maps)
	if err != nil {
		return nil, err
	}
	var out []mapping
	for _, m := range all {
		if m.path == path && m.readOnly() {
			out = append(out, m.mapping)
		}
	}
	return out, nil
}

func madvise(m mapping, advice int) error {
	// A raw call: the range is the process's own mapping, not Go memory.
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice)); errno != 0 {
		return fmt.Errorf("madvise(%#x, %d, %d): %w", m.start, m.end-m.start, advice, errno)
	}
	return nil
}

// residentFile returns RssFile of /proc/self/status in bytes.
func residentFile() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no RssFile in /proc/self/status")
}
