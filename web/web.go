// Package web holds the console's templ components (web/templates) and its
// static files, embedded so the binary serves them without a file system.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// Static is the static file tree (htmx, CSS, script, icons) rooted at
// static/, served under /static/.
func Static() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		// fs.Sub fails only on an invalid path literal, which is fixed above.
		panic(err)
	}
	return sub
}
