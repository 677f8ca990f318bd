package workspace

import (
	"strings"
	"testing"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestParseServerURLSplitsBaseAndWorkspacePath(t *testing.T) {
	for _, tc := range []struct {
		server   string
		wantBase string
		wantPath logicalcluster.Path
		wantErr  string
	}{
		{server: "https://127.0.0.1:6443/clusters/root", wantBase: "https://127.0.0.1:6443", wantPath: "root"},
		{server: "https://h/clusters/root:org:team/", wantBase: "https://h", wantPath: "root:org:team"},
		{server: "https://h/prefix/clusters/root:org", wantBase: "https://h/prefix", wantPath: "root:org"},
		{server: "https://h/clusters/system:admin", wantBase: "https://h", wantPath: "system:admin"},
		{server: "https://h:6443/", wantBase: "https://h:6443"},
		{server: "https://h/clusters/Root", wantErr: "invalid workspace path"},
		{server: "/clusters/root", wantErr: "not an absolute URL"},
	} {
		t.Run(tc.server, func(t *testing.T) {
			got, err := ParseServerURL(tc.server)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Base != tc.wantBase || got.Path != tc.wantPath {
				t.Errorf("got base %q path %q, want %q %q", got.Base, got.Path, tc.wantBase, tc.wantPath)
			}
		})
	}
}

func TestClassifyReadsArgumentsAsKCPsPluginDoes(t *testing.T) {
	for _, tc := range []struct {
		arg      string
		want     string
		target   Target
		wantNote bool
	}{
		{arg: "", want: "~", target: TargetHome},
		{arg: "~", want: "~", target: TargetHome},
		{arg: "~:project", want: "~:project", target: TargetHome},
		{arg: "/home/alice", want: "~", target: TargetHome},                 // shell-expanded ~
		{arg: "/home/alice/project", want: "~:project", target: TargetHome}, // shell-expanded ~/project
		{arg: "/home/alicex", want: ":home:alicex", target: TargetPath},     // not the home directory
		{arg: ".", want: ".", target: TargetCurrent},
		{arg: "-", want: "-", target: TargetPrevious},
		{arg: ":", want: ":", target: TargetRoot},
		{arg: "..", want: "..", target: TargetPath},
		{arg: "team", want: "team", target: TargetPath},
		{arg: "a/b", want: "a:b", target: TargetPath},
		{arg: ":root:org", want: ":root:org", target: TargetPath},
		{arg: "root:org", want: ":root:org", target: TargetPath, wantNote: true},
		{arg: "root", want: ":root", target: TargetPath, wantNote: true},
		{arg: "rooted", want: "rooted", target: TargetPath},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			got, target, note := Classify(tc.arg, "/home/alice")
			if got != tc.want || target != tc.target || (note != "") != tc.wantNote {
				t.Errorf("Classify(%q) = %q, %v, note %q; want %q, %v, note %v", tc.arg, got, target, note, tc.want, tc.target, tc.wantNote)
			}
		})
	}
}

func TestResolveMakesRelativeAndDottedPathsAbsolute(t *testing.T) {
	for _, tc := range []struct {
		current logicalcluster.Path
		arg     string
		want    logicalcluster.Path
		wantErr string
	}{
		{current: "root", arg: "org", want: "root:org"},
		{current: "root:org", arg: "team:sub", want: "root:org:team:sub"},
		{current: "root:org:team", arg: "..", want: "root:org"},
		{current: "root:org:team", arg: "..:..", want: "root"},
		{current: "root:org:team", arg: "..:other", want: "root:org:other"},
		{current: "root:org", arg: ".", want: "root:org"},
		{current: "root:org", arg: ":root:x", want: "root:x"},
		{current: "root:org", arg: ":root:x:..:y", want: "root:y"},
		{current: "", arg: ":root:x", want: "root:x"},
		{current: "user:alice", arg: "project", want: "user:alice:project"},
		{current: "root", arg: "..", wantErr: "cannot go up from the top-level workspace"},
		{current: "root:org", arg: "..:..:..", wantErr: "cannot go up from the top-level workspace"},
		{current: "", arg: "org", wantErr: "does not point to a workspace"},
		{current: "root", arg: "Org", wantErr: `invalid workspace path "Org"`},
		{current: "root", arg: "a::b", wantErr: "empty segment"},
	} {
		t.Run(string(tc.current)+" "+tc.arg, func(t *testing.T) {
			got, err := Resolve(tc.current, tc.arg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Resolve(%q, %q) error = %v, want one containing %q", tc.current, tc.arg, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Resolve(%q, %q) = %q, want %q", tc.current, tc.arg, got, tc.want)
			}
		})
	}
}

func TestRenderTreeDrawsKCPsLayout(t *testing.T) {
	got := RenderTree([]*TreeNode{{Name: "root", Children: []*TreeNode{
		{Name: "org", Children: []*TreeNode{{Name: "a"}, {Name: "b", Children: []*TreeNode{{Name: "c"}}}}},
		{Name: "other"},
	}}})
	want := `.
└── root
    ├── org
    │   ├── a
    │   └── b
    │       └── c
    └── other
`
	if got != want {
		t.Errorf("RenderTree =\n%s\nwant\n%s", got, want)
	}
}
