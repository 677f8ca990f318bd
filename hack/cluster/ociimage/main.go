// Command ociimage builds a container image from local files into an OCI
// image archive that `ctr images import` loads, without a container
// daemon or registry: one layer holding the files, a config with the
// entrypoint and user. The test node (make test-cluster) builds the
// project's image, etcd's and the pause image with it.
//
//	ociimage --name shardplane.local/shardplane:test --output image.tar \
//	  --file bin/shard=/usr/local/bin/shard --entrypoint /usr/local/bin/shard
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var files fileList
	name := flag.String("name", "", "image name, e.g. shardplane.local/shardplane:test")
	output := flag.String("output", "", "OCI image archive (tar) to write")
	entrypoint := flag.String("entrypoint", "", "the image's entrypoint")
	user := flag.String("user", "65532:65532", "the image's user")
	workdir := flag.String("workdir", "/", "the image's working directory")
	flag.Var(&files, "file", "local=path-in-image, repeated; the file is executable")
	flag.Parse()
	if *name == "" || *output == "" || len(files) == 0 {
		fmt.Fprintln(os.Stderr, "ociimage needs --name, --output and at least one --file")
		os.Exit(2)
	}
	if err := build(*name, *output, *entrypoint, *user, *workdir, files); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func build(name, output, entrypoint, user, workdir string, files []string) error {
	layerTar, err := layerOf(files, workdir)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", goarch()
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.User = user
	cfg.Config.WorkingDir = workdir
	cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	if entrypoint != "" {
		cfg.Config.Entrypoint = []string{entrypoint}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	// containerd names the imported image by this annotation.
	annotations := map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name}
	if err := p.AppendImage(img, layout.WithAnnotations(annotations), layout.WithPlatform(v1.Platform{OS: "linux", Architecture: goarch()})); err != nil {
		return fmt.Errorf("write OCI layout: %w", err)
	}
	return tarDir(dir, output)
}

// layerOf is a tar of the files, their parent directories, /tmp and the
// working directory, owned by root, as a scratch image needs them.
func layerOf(files []string, workdir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	addDir := func(d string, mode int64) error {
		d = strings.TrimPrefix(path.Clean(d), "/")
		if d == "" || d == "." || dirs[d] {
			return nil
		}
		var parents []string
		for p := d; p != "." && p != ""; p = path.Dir(p) {
			if !dirs[p] {
				parents = append(parents, p)
			}
		}
		sort.Strings(parents)
		for _, p := range parents {
			m := int64(0o755)
			if p == d {
				m = mode
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: m, ModTime: time.Unix(0, 0)}); err != nil {
				return err
			}
			dirs[p] = true
		}
		return nil
	}
	if err := addDir("/tmp", 0o1777); err != nil {
		return nil, err
	}
	if err := addDir(workdir, 0o755); err != nil {
		return nil, err
	}
	for _, f := range files {
		local, inImage, ok := strings.Cut(f, "=")
		if !ok || !strings.HasPrefix(inImage, "/") {
			return nil, fmt.Errorf("--file %q: want local=/path/in/image", f)
		}
		data, err := os.ReadFile(local)
		if err != nil {
			return nil, err
		}
		if err := addDir(path.Dir(inImage), 0o755); err != nil {
			return nil, err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(inImage, "/"), Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir writes the OCI layout directory as the archive ctr imports.
func tarDir(dir, output string) error {
	out, err := os.Create(output)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		out.Close()
		return err
	}
	if err := tw.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func goarch() string { return runtime.GOARCH }
