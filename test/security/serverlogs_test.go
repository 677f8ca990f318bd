package security

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/shardplane/shardplane/test/framework"
)

// A panic in a process log shows as "Observed a panic" when
// apimachinery's HandleCrash recovers it (as the apiserver chains do), as
// "http: panic serving" when net/http recovers it (HandleCrash re-panics,
// so most panics show both ways), and as a line starting "panic: " when it
// crashed the process. "apiserver panic'd" always follows "Observed a
// panic".
const (
	observedPanic = "Observed a panic"
	servingPanic  = "http: panic serving"
	fatalPanic    = "panic: "
)

// logMarks are the sizes of the system's process logs when the suite
// started: only what was logged after them counts.
type logMarks map[string]int64

// markLogs remembers the size of every process log of the system (the
// launcher's and each process's <name>.log in the system directory).
func markLogs(s *framework.System) logMarks {
	marks := logMarks{}
	paths, _ := filepath.Glob(filepath.Join(s.Dir, "*.log"))
	for _, p := range append(paths, s.LogPath()) {
		if st, err := os.Stat(p); err == nil {
			marks[p] = st.Size()
		} else {
			marks[p] = 0
		}
	}
	return marks
}

// panicsSince counts the panics the processes logged after the marks and
// returns their total and the lines that report them (log: line).
func panicsSince(s *framework.System, marks logMarks) (int, []string) {
	paths, _ := filepath.Glob(filepath.Join(s.Dir, "*.log"))
	paths = append(paths, s.LogPath())
	sort.Strings(paths)
	total := 0
	var reports []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if _, err := f.Seek(marks[p], io.SeekStart); err != nil {
			f.Close()
			continue
		}
		observed, serving := 0, 0
		r := bufio.NewReaderSize(f, 1<<16)
		for {
			line, err := r.ReadString('\n')
			isPanic := true
			switch {
			case strings.Contains(line, observedPanic):
				observed++
			case strings.Contains(line, servingPanic):
				serving++
			case strings.HasPrefix(line, fatalPanic):
				total++
			default:
				isPanic = false
			}
			if isPanic {
				reports = append(reports, fmt.Sprintf("%s: %s", filepath.Base(p), truncate(strings.TrimSpace(line), 400)))
			}
			if err != nil {
				break
			}
		}
		total += max(observed, serving)
		f.Close()
	}
	return total, reports
}
