"""Model providers: one interface (`base.Provider`), one module per provider."""
