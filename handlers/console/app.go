package console

import (
	"io/fs"
	"net/http"

	"github.com/labstack/echo/v4"
)

// The installable app's two root files. The service worker must be served
// from the root: a worker controls only the paths under its own URL, and
// notification taps open cards anywhere in the console (a root worker
// needs no Service-Worker-Allowed header).
const (
	ManifestPath   = "/manifest.webmanifest"
	WorkerPath     = "/sw.js"
	manifestType   = "application/manifest+json"
	javascriptType = "text/javascript; charset=utf-8"
)

// Manifest serves the web app manifest, which makes the console
// installable (home screen, standalone window; iOS delivers Web Push only
// to an installed app).
func Manifest(fsys fs.FS) echo.HandlerFunc {
	return rootFile(fsys, "manifest.webmanifest", manifestType, "public, max-age=3600")
}

// Worker serves the service worker. no-cache makes the browser check for a
// new worker on every registration instead of keeping an old binary's.
func Worker(fsys fs.FS) echo.HandlerFunc {
	return rootFile(fsys, "sw.js", javascriptType, "no-cache")
}

// rootFile serves one static file at a fixed path with its content type
// (Go's table knows neither .webmanifest nor a worker's needs) and cache
// policy.
func rootFile(fsys fs.FS, name, contentType, cache string) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, contentType)
		h.Set("Cache-Control", cache)
		http.ServeFileFS(c.Response(), c.Request(), fsys, name)
		return nil
	}
}
