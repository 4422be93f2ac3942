package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// module is one module's files, as its zip in a module proxy holds them.
type module struct {
	path, version string
	files         map[string][]byte // by path inside the module
}

// fromWorkTree is the module rooted at dir (a path inside the repository
// at root, "" for the root) as the working tree has it: its tracked files,
// those of modules nested in it left out, as `go mod download` of a
// released version would have them. Only `make tidy` serves the working
// tree (the go.mod being edited); the release check serves commits.
func fromWorkTree(root, dir, modPath, version string) (*module, error) {
	out, err := git(root, "ls-files", "-z", "--", orDot(dir))
	if err != nil {
		return nil, err
	}
	m := &module{path: modPath, version: version, files: map[string][]byte{}}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		rel, ok := inModule(dir, name)
		if !ok {
			continue
		}
		info, err := os.Lstat(filepath.Join(root, name))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted, not yet committed
			}
			return nil, err
		}
		if !info.Mode().IsRegular() {
			continue // module zips hold regular files only
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return nil, err
		}
		m.files[rel] = data
	}
	return m, m.nestedOut()
}

// fromCommit is the module rooted at dir as the commit rev (a tag, HEAD)
// has it: `git archive` of rev, what a tag of it would publish.
func fromCommit(root, dir, rev, modPath, version string) (*module, error) {
	files, err := archive(root, rev, dir)
	if err != nil {
		return nil, err
	}
	m := &module{path: modPath, version: version, files: map[string][]byte{}}
	for name, data := range files {
		if rel, ok := inModule(dir, name); ok {
			m.files[rel] = data
		}
	}
	return m, m.nestedOut()
}

// archive returns the regular files under dir ("" for all) of the commit
// rev, by their paths in the repository: `git archive` of rev.
func archive(root, rev, dir string) (map[string][]byte, error) {
	out, err := git(root, "archive", "--format=tar", rev, "--", orDot(dir))
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = data
	}
}

// nestedOut leaves out the files of modules nested in m: those under a
// directory (not m's root) with a go.mod of its own.
func (m *module) nestedOut() error {
	if _, ok := m.files["go.mod"]; !ok {
		return fmt.Errorf("%s: no go.mod", m.path)
	}
	for name := range m.files {
		if path.Base(name) != "go.mod" || name == "go.mod" {
			continue
		}
		nested := path.Dir(name) + "/"
		for other := range m.files {
			if strings.HasPrefix(other, nested) {
				delete(m.files, other)
			}
		}
	}
	return nil
}

// inModule returns name (a path in the repository) relative to dir, and
// whether it is under dir.
func inModule(dir, name string) (string, bool) {
	if dir == "" {
		return name, true
	}
	rel, ok := strings.CutPrefix(name, dir+"/")
	return rel, ok
}

func orDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// names are m's files as its zip names them, sorted.
func (m *module) names() []string {
	var names []string
	for name := range m.files {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// sum is m's zip's hash as go.sum and a binary's build info record it
// (golang.org/x/mod/sumdb/dirhash's Hash1).
func (m *module) sum() string {
	h := sha256.New()
	for _, name := range m.names() {
		fmt.Fprintf(h, "%x  %s@%s/%s\n", sha256.Sum256(m.files[name]), m.path, m.version, name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// serve writes m into the file module proxy at dir (GOPROXY=file://dir):
// its version list, info, go.mod and zip.
func (m *module) serve(dir string) error {
	at := filepath.Join(dir, filepath.FromSlash(m.path), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	for _, name := range m.names() {
		w, err := zw.Create(m.path + "@" + m.version + "/" + name)
		if err != nil {
			return err
		}
		if _, err := w.Write(m.files[name]); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":              []byte(m.version + "\n"),
		m.version + ".info": info,
		m.version + ".mod":  m.files["go.mod"],
		m.version + ".zip":  zipped.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// git runs git in dir and returns its output.
func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}
