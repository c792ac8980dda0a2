"""What a test reads back from the metadata database."""

from __future__ import annotations

from sqlalchemy import select

from services.config import Settings
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document


def stored_documents(settings: Settings) -> list[Document]:
    """Every Document row, by doc_num (detached: readable after the session closed)."""
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            return list(session.scalars(select(Document).order_by(Document.doc_num)))
    finally:
        engine.dispose()
