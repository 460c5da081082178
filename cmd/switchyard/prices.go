package main

import "path/filepath"

// configDir is the directory of the configuration file at path, which a
// relative pricing.catalogue is read from; "" (the working directory) for
// no file (--demo).
func configDir(path string) string {
	if path == "" {
		return ""
	}
	return filepath.Dir(path)
}
