package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ShellBlocks returns the ```sh blocks of the section of the repository's
// file that starts with heading, in order.
func ShellBlocks(t testing.TB, file, heading string) []string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("%s has no section %q", file, heading)
	}
	section := text[start+1+len(heading):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for {
		open := strings.Index(section, "```sh\n")
		if open < 0 {
			break
		}
		section = section[open+len("```sh\n"):]
		end := strings.Index(section, "```")
		if end < 0 {
			t.Fatalf("%s section %q has an unterminated code block", file, heading)
		}
		blocks = append(blocks, section[:end])
		section = section[end+3:]
	}
	if len(blocks) == 0 {
		t.Fatalf("%s section %q has no sh blocks", file, heading)
	}
	return blocks
}
