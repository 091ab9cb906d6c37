"""``harness replay TRACE --serve PORT``: the replay page over HTTP (Starlette on uvicorn).

``GET /`` is the page (the same one ``--html`` writes, its camera images fetched from the
server instead of embedded), ``GET /frames/<member>`` one recorded image, ``GET
/view.json`` the view frames (:mod:`harness_bt.viz.view`). The socket is bound before the
server starts, so a port in use is refused at once with a clear error; port 0 takes a free
one. :meth:`ReplayServer.start` serves from a thread (tests, notebooks), :meth:`serve`
until interrupted (the command).
"""

from __future__ import annotations

import threading
from pathlib import Path

from harness_bt import listen
from harness_bt.recording import FrameStore
from harness_bt.trace import TraceReader
from harness_bt.viz.html import page
from harness_bt.viz.view import Images, page_svg, view_frames

__all__ = ["ReplayServer"]


class ReplayServer:
    """Serves the replay of the trace at ``path`` on ``host:port`` (loopback by default)."""

    def __init__(self, path: str | Path, *, host: str = "127.0.0.1", port: int = 0,
                 fold: bool = True) -> None:
        from starlette.applications import Starlette
        from starlette.responses import HTMLResponse, JSONResponse, Response
        from starlette.routing import Route

        self.path = Path(path)
        reader = TraceReader.open(self.path)
        structure = reader.structure
        self.store = FrameStore.beside(self.path, reader.events)
        images = Images.of(reader, self.store, url="frames/")
        views = view_frames(reader, fold=fold, images=images)
        html = page(structure, views, svg=page_svg(structure, views, fold=fold),
                    images=images.sources, problem=images.problem)

        async def index(_: object) -> HTMLResponse:
            return HTMLResponse(html)

        async def view(_: object) -> JSONResponse:
            return JSONResponse({"task": structure.get("task"), "frames": views})

        async def image(request: object) -> Response:
            member = str(request.path_params["member"])  # type: ignore[attr-defined]
            data = self.store.get(member)
            if data is None:
                return Response(f"no recorded image {member!r}", status_code=404,
                                media_type="text/plain")
            return Response(data, media_type="image/jpeg",
                            headers={"Cache-Control": "max-age=3600"})

        self.app = Starlette(routes=[Route("/", index), Route("/view.json", view),
                                     Route("/frames/{member:path}", image)])
        self.socket = listen.bind(host, port, option="--serve")
        self.host, self.port = self.socket.getsockname()[:2]
        self._server: object | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in str(self.host) else self.host
        return f"http://{host}:{self.port}/"

    def _make(self) -> object:
        import uvicorn

        config = uvicorn.Config(self.app, log_level="warning", lifespan="off",
                                access_log=False)
        return uvicorn.Server(config)

    def serve(self) -> None:
        """Serve until interrupted (Ctrl-C: :class:`KeyboardInterrupt`), then close the
        socket (:func:`harness_bt.listen.serve`, the helper every server shares)."""
        listen.serve(self.app, self.socket, lifespan="off")

    def start(self) -> None:
        """Serve from a thread; :meth:`stop` ends it."""
        self._server = server = self._make()
        self._thread = threading.Thread(target=server.run,  # type: ignore[attr-defined]
                                        kwargs={"sockets": [self.socket]},
                                        name="replay-server", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """End the thread :meth:`start` began and close the socket."""
        if self._server is not None:
            self._server.should_exit = True  # type: ignore[attr-defined]
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
        self.socket.close()
