package main

import "testing"

func TestMountedFSType(t *testing.T) {
	mounts := "/dev/vda / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\nproc /proc proc rw 0 0\ntmpfs /dev/shm tmpfs ro 0 0\n"
	for path, want := range map[string]string{
		"/dev/shm/zktest-1/data": "tmpfs",
		"/dev/shm":               "tmpfs",
		"/dev/shmx/data":         "ext4",
		"/tmp/zktest-1/data":     "ext4",
	} {
		if got := mountedFSType(mounts, path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	if got := mountedFSType("", "/tmp"); got != "unknown" {
		t.Errorf("no mounts: %q", got)
	}
}
