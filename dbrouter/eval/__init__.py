"""`dbrouter eval ...`: accuracy and speed measured on whole benchmark splits."""
