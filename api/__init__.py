"""The REST API: a FastAPI app built by ``api.main.create_app(settings)``.

Routes are thin (parse, call a service, shape the response); logic lives in
``controller/services``; every domain error becomes ``application/problem+json``
(``api/errors.py``).
"""
