"""scopetool inside the agent frameworks users already run.

One module per framework, each behind its own optional extra. Importing this package imports no
framework; import the module of the framework you use.
"""
