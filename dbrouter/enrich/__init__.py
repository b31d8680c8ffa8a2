"""What an LLM adds to the KB when one is configured: structured domain statements and example
descriptors (the rules of the dbt build stand otherwise).
"""
