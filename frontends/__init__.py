"""Front-ends: each turns a program written in another DSL into an ms.Function."""
